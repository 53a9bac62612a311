package apitypes

import "encoding/json"

func marshalString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// UnmarshalJSON reads a string or null; an absent field leaves the pointer
// to OptionalString nil.
func (o *OptionalString) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	o.Value = s
	return nil
}
