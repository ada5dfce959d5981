package fuzzbytes_test

import (
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/base/fuzzbytes"
)

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want []int // what Int returns, drawn len(want) times
	}{
		{"empty input draws zeros", nil, []int{0, 0}},
		{"bytes in order, then zeros", []byte{7, 0, 255}, []int{7, 0, 255, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fuzzbytes.New(tc.data)
			var got []int
			for i := range tc.want {
				if left, want := r.Len(), max(len(tc.data)-i, 0); left != want {
					t.Fatalf("before draw %d: Len = %d, want %d", i, left, want)
				}
				got = append(got, r.Int())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("drew %v, want %v", got, tc.want)
			}
		})
	}
}
