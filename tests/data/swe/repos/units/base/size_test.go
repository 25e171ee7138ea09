package units

import "testing"

func TestParseSizeBytes(t *testing.T) {
	got, err := ParseSize("512B")
	if err != nil || got != 512 {
		t.Fatalf("ParseSize(512B) = %d, %v; want 512", got, err)
	}
}

func TestParseSizeKilobytes(t *testing.T) {
	got, err := ParseSize("10KB")
	if err != nil || got != 10000 {
		t.Fatalf("ParseSize(10KB) = %d, %v; want 10000", got, err)
	}
}
