package crowhome

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
