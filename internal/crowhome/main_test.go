package crowhome

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// The writer tests re-run this test binary as separate processes, so
// flock is exercised between real processes, not only goroutines.
const helperEnv = "CROWHOME_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "setchoice":
		os.Exit(helperSetChoice())
	case "churn":
		os.Exit(helperChurn())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper")
		os.Exit(2)
	}
}

// helperSetChoice sets N distinct ids PREFIX-0 … PREFIX-(N-1).
func helperSetChoice() int {
	file, prefix := os.Getenv("CROWHOME_TEST_FILE"), os.Getenv("CROWHOME_TEST_PREFIX")
	n, err := strconv.Atoi(os.Getenv("CROWHOME_TEST_N"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := range n {
		choice := ChoiceWalled
		if i%2 == 1 {
			choice = ChoiceNotWalled
		}
		if _, err := SetChoice(file, fmt.Sprintf("%s-%d", prefix, i), choice, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// helperChurn rewrites the file as fast as it can until it is killed.
func helperChurn() int {
	file := os.Getenv("CROWHOME_TEST_FILE")
	for i := 0; ; i++ {
		// A random choice, so every round writes: a fixed pattern would be
		// all no-ops once an earlier round had written it whole.
		choice := ChoiceWalled
		if rand.IntN(2) == 1 {
			choice = ChoiceNotWalled
		}
		if _, err := SetChoice(file, fmt.Sprintf("churn-%d", i%50), choice, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}
