package dynamo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// TablePrefix starts the name of every table a Store creates.
const TablePrefix = "stormctl_"

// Config configures one Store.
type Config struct {
	// Endpoint is the URL of the DynamoDB API (an embedded server, DynamoDB
	// Local or AWS). Empty: the SDK's default endpoint for the region (AWS).
	Endpoint string
	// Table names the table the Store creates and owns. Empty: TablePrefix
	// plus a random suffix. The table must not exist yet.
	Table string
	// Region is the signing region. Empty: the standard configuration's
	// region, else us-east-1.
	Region string
	// StaticCredentials signs with fixed dummy credentials instead of the
	// standard credential chain: for embedded servers, which check none.
	StaticCredentials bool
	// Keep keeps the table and its items when the Store closes.
	Keep bool
	// OpenTimeout bounds how long Open tries to reach the endpoint and
	// create the table (0: 5 s).
	OpenTimeout time.Duration
	// MaxAttempts bounds the SDK's attempts per request (0: 3).
	MaxAttempts int
	// TablePerRun gives each run two tables of its own, created by
	// CreateRun: Table + "_" + a hash of the run id for its events, and the
	// same + "_k" for its run item and key markers, instead of one table
	// for every item of every run. Items, keys, conditions and transactions
	// are the same; only the table an item lives in differs. It exists for
	// minidyn, whose every transaction deep-copies each table it touches
	// (its rollback snapshot) and whose every Query interprets its key
	// condition on every item of the table, all under one global lock: with
	// one table a storm's cost grows with the square of its size. Leave it
	// off against DynamoDB Local or AWS.
	TablePerRun bool
	// Logger receives the SDK's own log lines at debug level (nil:
	// discarded). They are the SDK's warnings, such as a response body it
	// could not drain after a request was cancelled: nothing a storm's
	// reader can act on, and nothing to print between its progress lines.
	Logger *slog.Logger
}

// Store is one DynamoDB table of event-log items, safe for concurrent use.
type Store struct {
	cfg         Config
	db          *dynamodb.Client
	transport   *http.Transport
	runs        sync.Map // run id → eventlog.Run; a run's record never changes
	tables      sync.Map // TablePerRun: name → struct{}, the tables created
	reads       sync.Map // run id → *runReads, the coalesced whole-run reads
	seqCounters sync.Map // run id → *runCounter, seq runs' counters as last seen
	closed      atomic.Bool
	// resetMu excludes Reset and Close (writers) from other operations.
	resetMu sync.RWMutex
}

// Open connects to cfg.Endpoint and creates the Store's table: partition
// key runId, sort key eventId (both strings), billed per request. An
// endpoint that cannot be reached within cfg.OpenTimeout fails with
// eventlog.ErrUnavailable and one line naming it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Table == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("dynamo: random table name: %w", err)
		}
		cfg.Table = TablePrefix + hex.EncodeToString(b[:])
	}
	if err := checkTableName(cfg.Table); err != nil {
		return nil, err
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = 5 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("dynamo: invalid endpoint %q: want http://host:port or https://host", cfg.Endpoint)
		}
	}
	octx, cancel := context.WithTimeout(ctx, cfg.OpenTimeout)
	defer cancel()
	st, err := newStore(octx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.TablePerRun {
		err = st.probe(octx)
	} else {
		err = st.createTable(octx, cfg.Table)
	}
	if err != nil {
		st.transport.CloseIdleConnections()
		if ctx.Err() == nil && octx.Err() != nil && !errors.Is(err, eventlog.ErrUnavailable) {
			err = eventlog.Unavailable("dynamo: create table "+cfg.Table+" at "+st.where(), err)
		}
		return nil, err
	}
	return st, nil
}

func newStore(ctx context.Context, cfg Config) (*Store, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			logger.Debug(fmt.Sprintf(format, v...), "source", "aws-sdk", "class", string(c))
		})),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = 300 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.StaticCredentials {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("stormctl", "stormctl", "")))
	}
	if loopback(cfg.Endpoint) {
		// A DynamoDB on this machine is never on EC2's metadata service:
		// don't let the credential chain wait for it.
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("dynamo: AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	if !cfg.StaticCredentials {
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			if !loopback(cfg.Endpoint) {
				where := cfg.Endpoint
				if where == "" {
					where = "AWS"
				}
				return nil, eventlog.Unavailable("dynamo: no AWS credentials for "+where+" (standard chain: environment, shared config, SSO, EC2/ECS roles)", err)
			}
			// DynamoDB Local checks no credentials: sign with dummy ones
			// rather than fail for want of an AWS account.
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider("stormctl", "stormctl", "")
		}
	}
	// The standard configuration's transport (with AWS_CA_BUNDLE applied
	// when set), sized for a storm's concurrency and owned by the Store so
	// that Close can drop its connections.
	var tr *http.Transport
	if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		tr = bc.GetTransport()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 30 * time.Second
	tr.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc := &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.HTTPClient = hc
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Store{cfg: cfg, db: db, transport: tr}, nil
}

// loopback reports whether endpoint names this machine.
func loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkTableName enforces DynamoDB's table naming rules and the prefix.
func checkTableName(name string) error {
	if !strings.HasPrefix(name, TablePrefix) || len(name) > 255 || len(name) <= len(TablePrefix) {
		return fmt.Errorf("dynamo: table %q: want %s followed by 1 to %d characters", name, TablePrefix, 255-len(TablePrefix))
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("dynamo: table %q: only letters, digits, '_', '-' and '.' are allowed", name)
		}
	}
	return nil
}

// where names the endpoint for messages.
func (st *Store) where() string {
	if st.cfg.Endpoint == "" {
		return "AWS (" + st.db.Options().Region + ")"
	}
	return st.cfg.Endpoint
}

// Table returns the name of the Store's table.
func (st *Store) Table() string { return st.cfg.Table }

// Endpoint returns the endpoint the Store talks to ("" for AWS's default).
func (st *Store) Endpoint() string { return st.cfg.Endpoint }

// tableFor names the table a run's event items live in.
func (st *Store) tableFor(runID string) string {
	if !st.cfg.TablePerRun {
		return st.cfg.Table
	}
	h := sha256.Sum256([]byte(runID))
	return st.cfg.Table + "_" + hex.EncodeToString(h[:8])
}

// keysTableFor names the table a run's item and key markers live in: the
// events' table, or with TablePerRun a second table of the run's, so that
// event Queries on minidyn scan events only.
func (st *Store) keysTableFor(runID string) string {
	if !st.cfg.TablePerRun {
		return st.cfg.Table
	}
	return st.tableFor(runID) + "_k"
}

// probe checks that the endpoint answers, by describing a table that does
// not exist yet.
func (st *Store) probe(ctx context.Context) error {
	_, err := st.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(st.cfg.Table)})
	var missing *types.ResourceNotFoundException
	if err == nil || errors.As(err, &missing) {
		return nil
	}
	return storeErr(ctx, "reach "+st.where(), err)
}

// createTable creates a table and waits until it is active.
func (st *Store) createTable(ctx context.Context, name string) error {
	_, err := st.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrRun), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrSort), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrRun), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSort), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: table %s: %w", name, ErrTableExists)
	}
	if err != nil {
		return storeErr(ctx, "create table "+name+" at "+st.where(), err)
	}
	if st.cfg.TablePerRun {
		st.tables.Store(name, struct{}{})
	}
	for {
		out, err := st.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return storeErr(ctx, "describe table "+name, err)
		}
		// minidyn reports no status at all; DynamoDB says CREATING, then
		// ACTIVE.
		if out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "") {
			return nil
		}
		if err := clock.Sleep(ctx, 200*time.Millisecond); err != nil {
			return storeErr(ctx, "wait for table "+name, err)
		}
	}
}

// deleteTable deletes a table; one that is gone already is fine.
func (st *Store) deleteTable(ctx context.Context, name string) error {
	_, err := st.db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var missing *types.ResourceNotFoundException
	if err == nil || errors.As(err, &missing) {
		st.tables.Delete(name)
		return nil
	}
	return storeErr(ctx, "delete table "+name, err)
}

// dropTables deletes every table the Store created.
func (st *Store) dropTables(ctx context.Context) error {
	if !st.cfg.TablePerRun {
		return st.deleteTable(ctx, st.cfg.Table)
	}
	var errs []error
	st.tables.Range(func(k, _ any) bool {
		errs = append(errs, st.deleteTable(ctx, k.(string)))
		return true
	})
	return errors.Join(errs...)
}

// enter admits an operation; the returned func ends it.
func (st *Store) enter(ctx context.Context) (func(), error) {
	if st.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st.resetMu.RLock()
	if st.closed.Load() {
		st.resetMu.RUnlock()
		return nil, errClosed
	}
	return st.resetMu.RUnlock, nil
}

// Reset empties the Store: it deletes its table, with every run and event,
// and creates it afresh under the same name. Operations wait meanwhile.
func (st *Store) Reset(ctx context.Context) error {
	if st.closed.Load() {
		return errClosed
	}
	st.resetMu.Lock()
	defer st.resetMu.Unlock()
	if err := st.dropTables(ctx); err != nil {
		return err
	}
	st.runs.Clear()
	st.seqCounters.Clear()
	if st.cfg.TablePerRun {
		return nil
	}
	return st.createTable(ctx, st.cfg.Table)
}

// Close deletes the table (unless Config.Keep) and drops the connections.
// It waits for operations in flight; later ones fail.
func (st *Store) Close() error {
	if st.closed.Swap(true) {
		return nil
	}
	st.resetMu.Lock()
	defer st.resetMu.Unlock()
	var err error
	if !st.cfg.Keep {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.dropTables(ctx)
		cancel()
	}
	st.transport.CloseIdleConnections()
	return err
}

// CreateRun writes the run's item, stamped with its scheme, fence basis and
// guard (and, under seq and slot, counters at 0). An existing run fails with
// ErrRunExists.
func (st *Store) CreateRun(ctx context.Context, r eventlog.Run) error {
	done, err := st.enter(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := checkRun(r); err != nil {
		return err
	}
	if st.cfg.TablePerRun {
		names := []string{st.keysTableFor(r.ID), st.tableFor(r.ID)}
		if r.HookClaim != eventlog.HookClaimNone {
			names = append(names, st.keysTableFor(tokensPartition))
		}
		for _, name := range names {
			if err := st.createTable(ctx, name); err != nil && !errors.Is(err, ErrTableExists) {
				return err
			}
		}
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(st.keysTableFor(r.ID)),
		Item:                     runItem(r, time.Now()),
		ConditionExpression:      aws.String("attribute_not_exists(#sk)"),
		ExpressionAttributeNames: map[string]string{"#sk": AttrSort},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: create run %s: %w", r.ID, ErrRunExists)
	}
	if err != nil {
		return storeErr(ctx, "create run "+r.ID, err)
	}
	st.runs.Store(r.ID, r)
	return nil
}

// checkRun validates a run before it is written.
func checkRun(r eventlog.Run) error {
	switch {
	case r.ID == "" || len(r.ID) > 200 || strings.HasPrefix(r.ID, "#"):
		return fmt.Errorf("dynamo: create run %q: %w: want an id of 1 to 200 characters, not starting with '#'", r.ID, ErrInvalidRun)
	case r.Scheme != eventlog.SchemeULID && r.Scheme != eventlog.SchemeSeq && r.Scheme != eventlog.SchemeSlot:
		return fmt.Errorf("dynamo: create run %s: scheme %q: %w (valid: ulid, seq, slot)", r.ID, r.Scheme, ErrInvalidRun)
	case r.CheckFenceBasis() != nil:
		return fmt.Errorf("dynamo: create run %s: %w: %w", r.ID, ErrInvalidRun, r.CheckFenceBasis())
	case r.CheckHookClaim() != nil:
		return fmt.Errorf("dynamo: create run %s: %w: %w", r.ID, ErrInvalidRun, r.CheckHookClaim())
	case r.Guard != eventlog.GuardNone && r.Guard != eventlog.GuardCountIndex:
		return fmt.Errorf("dynamo: create run %s: guard %q: %w (valid: \"\", %q)", r.ID, r.Guard, ErrInvalidRun, eventlog.GuardCountIndex)
	}
	return nil
}

// Run returns a run's record (from the cache or its item, read
// consistently); an unknown run is eventlog.ErrNoRun.
func (st *Store) Run(ctx context.Context, runID string) (eventlog.Run, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return eventlog.Run{}, err
	}
	defer done()
	return st.run(ctx, runID)
}

func (st *Store) run(ctx context.Context, runID string) (eventlog.Run, error) {
	if v, ok := st.runs.Load(runID); ok {
		return v.(eventlog.Run), nil
	}
	if runID == "" {
		return eventlog.Run{}, fmt.Errorf("dynamo: run %q: %w", runID, eventlog.ErrNoRun)
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.keysTableFor(runID)),
		Key:            key(runID, RunSortKey),
		ConsistentRead: aws.Bool(true),
	})
	var missing *types.ResourceNotFoundException
	if st.cfg.TablePerRun && errors.As(err, &missing) {
		return eventlog.Run{}, fmt.Errorf("dynamo: run %s: %w", runID, eventlog.ErrNoRun)
	}
	if err != nil {
		return eventlog.Run{}, storeErr(ctx, "read run "+runID, err)
	}
	if len(out.Item) == 0 {
		return eventlog.Run{}, fmt.Errorf("dynamo: run %s: %w", runID, eventlog.ErrNoRun)
	}
	r, err := decodeRun(out.Item)
	if err != nil {
		return eventlog.Run{}, fmt.Errorf("dynamo: %w", err)
	}
	st.runs.Store(runID, r)
	return r, nil
}
