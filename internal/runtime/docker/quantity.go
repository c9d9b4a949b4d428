package docker

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"
)

// decimal is the number part of a quantity: big.Rat alone would also take
// fractions and exponents, which Kubernetes does not write this way.
var decimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// parseCPU turns a Kubernetes-style CPU amount ("0.5", "2", "500m") into
// Docker's NanoCPUs.
func parseCPU(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	scale := big.NewRat(1_000_000_000, 1)
	num := s
	if strings.HasSuffix(s, "m") {
		num = strings.TrimSuffix(s, "m")
		scale = big.NewRat(1_000_000, 1)
	}
	v, ok := new(big.Rat).SetString(num)
	if !decimal.MatchString(num) || !ok || v.Sign() <= 0 {
		return 0, fmt.Errorf("cpu %q: want a positive number of cores (\"0.5\", \"2\") or millicores (\"500m\")", s)
	}
	v.Mul(v, scale)
	n, ok := ratToInt64(v)
	if !ok || n < 1_000_000 { // Docker's floor is 0.001 CPU
		return 0, fmt.Errorf("cpu %q: out of range", s)
	}
	return n, nil
}

// memorySuffixes are Kubernetes quantity suffixes, binary and decimal.
var memorySuffixes = []struct {
	suffix string
	factor int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// parseMemory turns a Kubernetes-style memory amount ("256Mi", "1Gi",
// "512M", "1048576") into bytes.
func parseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	num, factor := s, int64(1)
	for _, m := range memorySuffixes {
		if strings.HasSuffix(s, m.suffix) {
			num, factor = strings.TrimSuffix(s, m.suffix), m.factor
			break
		}
	}
	v, ok := new(big.Rat).SetString(num)
	if !decimal.MatchString(num) || !ok || v.Sign() <= 0 {
		return 0, fmt.Errorf("memory %q: want a positive amount of bytes with an optional suffix (\"256Mi\", \"1Gi\", \"512M\")", s)
	}
	v.Mul(v, new(big.Rat).SetInt64(factor))
	n, ok := ratToInt64(v)
	if !ok {
		return 0, fmt.Errorf("memory %q: out of range", s)
	}
	return n, nil
}

// ratToInt64 rounds up, as Kubernetes does for fractional quantities.
func ratToInt64(v *big.Rat) (int64, bool) {
	q, r := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > math.MaxInt64 {
		return 0, false
	}
	return q.Int64(), true
}
