package dynamo

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestCancelled: the reasons of a cancelled transaction are told apart per
// item, as DynamoDB reports them (every failed condition), not only as
// minidyn does (the first).
func TestCancelled(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	old := map[string]types.AttributeValue{attrNextSeq: n(7), attrLastFenced: n(5)}
	tests := []struct {
		name    string
		reasons []types.CancellationReason
		want    cancellation
	}{
		{"counter only", []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed"), Item: old}, reason("None"), reason("None")},
			cancellation{counter: true, old: old, taken: -1}},
		{"key only", []types.CancellationReason{reason("None"), reason("None"), reason("ConditionalCheckFailed")},
			cancellation{taken: 2}},
		{"counter and key", []types.CancellationReason{reason("ConditionalCheckFailed"), reason("None"), reason("ConditionalCheckFailed")},
			cancellation{counter: true, taken: 2}},
		{"another transaction", []types.CancellationReason{reason("None"), reason("TransactionConflict")},
			cancellation{taken: -1, retry: true}},
		{"item too large", []types.CancellationReason{reason("None"), reason("ValidationError")},
			cancellation{taken: -1, other: "ValidationError"}},
		{"no reasons", nil, cancellation{taken: -1, retry: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := cancelled(&types.TransactionCanceledException{CancellationReasons: tt.reasons}, 0)
			if !ok {
				t.Fatal("not recognised as a cancelled transaction")
			}
			if c.counter != tt.want.counter || c.taken != tt.want.taken || c.retry != tt.want.retry || c.other != tt.want.other || (tt.want.old != nil) != (c.old != nil) {
				t.Fatalf("cancelled = %+v, want %+v", c, tt.want)
			}
		})
	}
	if _, ok := cancelled(errors.New("boom"), 0); ok {
		t.Fatal("a plain error was taken for a cancelled transaction")
	}
	next, fenced, err := counters(old)
	if err != nil || next != 7 || fenced != 5 {
		t.Fatalf("counters(ALL_OLD item) = %d, %d, %v", next, fenced, err)
	}
}
