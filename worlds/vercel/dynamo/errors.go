package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stormctl/stormctl/internal/eventlog"
)

var (
	// ErrRunExists: CreateRun found the run's item already there. It matches
	// eventlog.ErrConflict.
	ErrRunExists = fmt.Errorf("run exists: %w", eventlog.ErrConflict)

	// ErrBatchTooLarge: a batch needs more actions than one DynamoDB
	// transaction may hold (MaxTransactItems). It is refused whole, never
	// split, so that a batch stays all or nothing.
	ErrBatchTooLarge = errors.New("batch too large for one DynamoDB transaction")

	// ErrContention: a write lost the race for the run's counter item
	// MaxAttempts times in a row and gave up. Nothing was written.
	ErrContention = errors.New("run counter contended")

	// ErrInvalidRun: CreateRun was given a run this store cannot hold: an
	// empty or overlong id, or a scheme, fence basis or guard it does not
	// implement.
	ErrInvalidRun = errors.New("invalid run")

	// ErrTableExists: the table a Store was to create exists already. A
	// Store only uses tables it created, so it refuses rather than write
	// into someone's data.
	ErrTableExists = errors.New("table exists and was not created by this store")

	// ErrNotSlotRun: Reserve, Commit or Seal was asked of a run whose
	// scheme is not eventlog.SchemeSlot.
	ErrNotSlotRun = errors.New("not a slot run")

	// ErrNoSlot: Seal or Commit named a slot that was never reserved (no
	// slot item holds it).
	ErrNoSlot = errors.New("slot never reserved")

	// ErrNotReserved: Commit found a slot of its reservation committed
	// already, or reserved with other keys or at another time than the
	// reservation says: not a reservation this store handed out, or one
	// committed twice. Nothing was written.
	ErrNotReserved = errors.New("slot not held by this reservation")

	// errClosed is returned by every operation on a closed Store.
	errClosed = errors.New("dynamo: store is closed")
)

// throttleCodes are DynamoDB error codes that say the service cannot take
// the request now: the store is unavailable, not the request wrong.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"InternalFailure":                        true,
	"ServiceUnavailable":                     true,
	"LimitExceededException":                 true,
	"ResourceNotFoundException":              true, // the table is gone: nothing to write to
	"UnrecognizedClientException":            true, // credentials the endpoint does not know
	"InvalidSignatureException":              true,
	"AccessDeniedException":                  true,
	"MissingAuthenticationTokenException":    true,
}

// unreachable reports whether err means the endpoint cannot be used at all:
// a refused, reset or timed-out connection, a name that does not resolve, no
// credentials, a throttle or a server error that outlived the retries.
func unreachable(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && throttleCodes[apiErr.ErrorCode()] {
		return true
	}
	var netErr net.Error
	var maxAttempts *retry.MaxAttemptsError
	switch {
	case errors.As(err, &netErr), errors.As(err, &maxAttempts):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var opErr *smithy.OperationError
	if errors.As(err, &opErr) {
		// Credential resolution and request sending fail inside the
		// operation without an API error code.
		return !errors.As(err, &apiErr)
	}
	return false
}

// storeErr wraps err of operation op. A cancelled or expired ctx wins (the
// caller gave up); an unusable endpoint becomes eventlog.ErrUnavailable with
// the innermost network error as its cause, so the message stays one short
// line.
func storeErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("dynamo: %s: %w", op, cerr)
	}
	if unreachable(err) {
		return eventlog.Unavailable("dynamo: "+op, rootCause(err))
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}

// rootCause returns the network error inside an SDK error when there is one
// (its text names the address and the reason), else err.
func rootCause(err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return err
}

// cancellation sorts the reasons of a cancelled transaction.
type cancellation struct {
	// counter: the run item's condition failed; old holds the item as it was
	// (ReturnValuesOnConditionCheckFailure ALL_OLD), nil if the store did
	// not return it.
	counter bool
	old     map[string]types.AttributeValue
	// taken: the index of the first item whose attribute_not_exists failed
	// (an event or a key marker), -1 if none.
	taken int
	// retry: a reason that is worth retrying as is (TransactionConflict,
	// ThrottlingError): another transaction held one of the items.
	retry bool
	// other is the first reason code none of the above explains (such as
	// ValidationError), "" if none: retrying would not help.
	other string
	// failed lists every item whose condition failed, in transaction order,
	// with the item as it was when the store returned it (ALL_OLD); taken
	// and counter are read off it. DynamoDB reports every failed condition,
	// minidyn only the first.
	failed []failedItem
}

// failedItem is one failed condition of a cancelled transaction: the
// action's index and the item as it was (nil if the store did not return
// it or the item did not exist).
type failedItem struct {
	index int
	old   map[string]types.AttributeValue
}

// cancelled reads a TransactionCanceledException; ok is false for any other
// error. counterAt is the index of the run item's update in the transaction,
// or -1 if it has none.
func cancelled(err error, counterAt int) (c cancellation, ok bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return c, false
	}
	c.taken = -1
	for i, r := range tce.CancellationReasons {
		code := ""
		if r.Code != nil {
			code = *r.Code
		}
		switch code {
		case "", "None":
		case "ConditionalCheckFailed":
			c.failed = append(c.failed, failedItem{index: i, old: r.Item})
			if i == counterAt {
				c.counter, c.old = true, r.Item
			} else if c.taken < 0 {
				c.taken = i
			}
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			c.retry = true
		default:
			if c.other == "" {
				c.other = code
			}
		}
	}
	if !c.counter && c.taken < 0 && !c.retry && c.other == "" {
		// No reasons at all: treat as a conflict with another transaction.
		c.retry = true
	}
	return c, true
}
