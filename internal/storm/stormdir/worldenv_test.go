package stormdir_test

import (
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// TestStoreWorldEnv: settings are stored in order, each without its
// secrets, the secret flagged.
func TestStoreWorldEnv(t *testing.T) {
	got := stormdir.StoreWorldEnv([]string{"WORKFLOW_REDIS_URI=redis://:pw@cache:6379", "DEBUG=1", "API_TOKEN=t0k", "EMPTY="})
	want := []stormdir.Setting{
		{Key: "WORKFLOW_REDIS_URI", Value: "redis://:xxxxx@cache:6379", Secret: true},
		{Key: "DEBUG", Value: "1"},
		{Key: "API_TOKEN", Secret: true},
		{Key: "EMPTY"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("StoreWorldEnv = %+v, want %+v", got, want)
	}
}

// TestResumeWorldEnv: a resumed storm applies its stored settings again,
// takes the same ones given again, and refuses, in one line, a stored
// secret not given again and settings that are not the storm's. A key set
// more than once is compared with every stored setting of that key, in
// order.
func TestResumeWorldEnv(t *testing.T) {
	plain := []stormdir.Setting{{Key: "WORKFLOW_REDIS_URI", Value: "redis://127.0.0.1:6379"}, {Key: "DEBUG", Value: "1"}}
	secret := []stormdir.Setting{{Key: "WORKFLOW_REDIS_URI", Value: "redis://:xxxxx@cache:6379", Secret: true}}
	whole := []stormdir.Setting{{Key: "API_TOKEN", Secret: true}}
	twice := []stormdir.Setting{{Key: "A", Value: "1"}, {Key: "DEBUG", Value: "1"}, {Key: "A", Value: "2"}}
	tests := []struct {
		name   string
		stored []stormdir.Setting
		given  []string
		want   []string
		err    string
	}{
		{"none given: the stored ones", plain, nil, []string{"WORKFLOW_REDIS_URI=redis://127.0.0.1:6379", "DEBUG=1"}, ""},
		{"the same given again", plain, []string{"DEBUG=1", "WORKFLOW_REDIS_URI=redis://127.0.0.1:6379"}, []string{"DEBUG=1", "WORKFLOW_REDIS_URI=redis://127.0.0.1:6379"}, ""},
		{"a stored secret not given", secret, nil, nil,
			"--resume D: the storm ran with --world-env WORKFLOW_REDIS_URI=redis://:xxxxx@cache:6379, which held a secret storm.json does not keep: give its --world-env settings again"},
		{"a stored secret given again", secret, []string{"WORKFLOW_REDIS_URI=redis://:pw@cache:6379"}, []string{"WORKFLOW_REDIS_URI=redis://:pw@cache:6379"}, ""},
		{"another server", secret, []string{"WORKFLOW_REDIS_URI=redis://:pw@other:6379"}, nil,
			"--resume D: --world-env WORKFLOW_REDIS_URI=redis://:xxxxx@other:6379 differs from the storm's WORKFLOW_REDIS_URI=redis://:xxxxx@cache:6379 (storm.json); a resumed storm keeps its world environment: give the storm's, or drop --world-env"},
		{"a whole secret not given", whole, nil, nil,
			"--resume D: the storm ran with --world-env API_TOKEN=(not stored: a secret), which held a secret storm.json does not keep: give its --world-env settings again"},
		{"a whole secret given again, on trust", whole, []string{"API_TOKEN=anything"}, []string{"API_TOKEN=anything"}, ""},
		{"other keys", plain, []string{"DEBUG=1"}, nil,
			"--resume D: --world-env sets DEBUG, the storm set DEBUG, WORKFLOW_REDIS_URI (storm.json); a resumed storm keeps its world environment: give the same settings, or drop --world-env"},
		{"a storm without settings", nil, []string{"A=1"}, []string{"A=1"}, ""},
		{"a key given twice, as the storm did", twice, []string{"DEBUG=1", "A=1", "A=2"}, []string{"DEBUG=1", "A=1", "A=2"}, ""},
		{"a key given twice, the other way round", twice, []string{"A=2", "A=1", "DEBUG=1"}, nil,
			"--resume D: --world-env A=2, A=1 differs from the storm's A=1, A=2 (storm.json); a resumed storm keeps its world environment: give the storm's, or drop --world-env"},
		{"a key given once, the storm's twice", twice, []string{"A=2", "DEBUG=1"}, nil,
			"--resume D: --world-env A=2 differs from the storm's A=1, A=2 (storm.json); a resumed storm keeps its world environment: give the storm's, or drop --world-env"},
		{"a whole secret twice, given again twice, on trust", append(slices.Clone(whole), whole...), []string{"API_TOKEN=a", "API_TOKEN=b"}, []string{"API_TOKEN=a", "API_TOKEN=b"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &stormdir.Resume{Dir: "D", Meta: &stormdir.Meta{WorldEnv: tc.stored}}
			got, err := res.WorldEnv(tc.given, tc.given != nil)
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("err %v, want %s", err, tc.err)
				}
			case err != nil:
				t.Error(err)
			case !slices.Equal(got, tc.want):
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}
