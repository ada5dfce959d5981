package engine

import "fmt"

// IDPolicy is how correlation ids are drawn.
type IDPolicy string

// WakePolicy is how branches resumed by the log are scheduled.
type WakePolicy string

// FencePolicy is which appends are fenced.
type FencePolicy string

// RejectPolicy is what a writer does after a fenced rejection.
type RejectPolicy string

// AdmissionPolicy is how many invocations of one run may replay at once.
type AdmissionPolicy string

// Policy values.
const (
	IDsPositional IDPolicy = "positional"
	IDsCallsite   IDPolicy = "callsite"

	WakeRacy    WakePolicy = "racy"
	WakeOrdered WakePolicy = "ordered"

	FenceNone          FencePolicy = "none"
	FenceDecisions     FencePolicy = "decisions"
	FenceDecisionsOnly FencePolicy = "decisions-only"
	FenceAll           FencePolicy = "all"

	RejectRederive RejectPolicy = "rederive"
	RejectRepost   RejectPolicy = "repost"

	AdmitAll          AdmissionPolicy = "none"
	AdmitSingleRunner AdmissionPolicy = "single-runner"
)

// Policy is the engine's share of a storm condition.
type Policy struct {
	IDs       IDPolicy        `json:"ids"`
	Wake      WakePolicy      `json:"wake"`
	Fence     FencePolicy     `json:"fence"`
	OnReject  RejectPolicy    `json:"on_reject"`
	Admission AdmissionPolicy `json:"admission"`
}

// Validate names the first knob with an unknown value.
func (p Policy) Validate() error {
	check := func(knob, v string, valid ...string) error {
		for _, x := range valid {
			if v == x {
				return nil
			}
		}
		return fmt.Errorf("unknown %s %q (valid: %v)", knob, v, valid)
	}
	for _, err := range []error{
		check("ids", string(p.IDs), string(IDsPositional), string(IDsCallsite)),
		check("wake", string(p.Wake), string(WakeRacy), string(WakeOrdered)),
		check("fence", string(p.Fence), string(FenceNone), string(FenceDecisions), string(FenceDecisionsOnly), string(FenceAll)),
		check("on-reject", string(p.OnReject), string(RejectRederive), string(RejectRepost)),
		check("admission", string(p.Admission), string(AdmitAll), string(AdmitSingleRunner)),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Fenced reports whether decisions are appended as one fenced batch.
func (p Policy) Fenced() bool { return p.Fence != FenceNone }
