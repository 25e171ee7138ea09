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

func TestParseSizeMegabytes(t *testing.T) {
	got, err := ParseSize("3MB")
	if err != nil || got != 3000000 {
		t.Fatalf("ParseSize(3MB) = %d, %v; want 3000000", got, err)
	}
}

func TestParseSizeLowercase(t *testing.T) {
	got, err := ParseSize("10kb")
	if err != nil || got != 10000 {
		t.Fatalf("ParseSize(10kb) = %d, %v; want 10000", got, err)
	}
}
