package apitypes

import "encoding/json"

func marshalString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
