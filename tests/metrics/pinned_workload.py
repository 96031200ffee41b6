# Recomputes the pinned trace of tests/metrics/workload_test.cpp
# (pinnedTraceDoesNotDrift) without the C++ standard library: the reference
# MT19937-64 (Matsumoto & Nishimura), 53 bits -> [0, 1), exponential gaps by
# -log1p(-u) / rate, lengths by rejection below 2^64 mod range, then modulo.
# Command: python3 tests/metrics/pinned_workload.py
# Prints the check of the generator against the C++ standard's required
# 10000th output, then arrival_s, prompt_tokens, output_tokens per request
# for SyntheticWorkload{seed 42, 3 requests, rate 4, prompts 32..256, outputs 16..128}.
import math


class MT64:
    def __init__(self, seed):
        self.mt = [0] * 312
        self.mt[0] = seed & (2**64 - 1)
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & (2**64 - 1)
        self.i = 312

    def next(self):
        if self.i >= 312:
            for k in range(312):
                x = (self.mt[k] & 0xFFFFFFFF80000000) | (self.mt[(k + 1) % 312] & 0x7FFFFFFF)
                xa = x >> 1
                if x & 1:
                    xa ^= 0xB5026F5AA96619E9
                self.mt[k] = self.mt[(k + 156) % 312] ^ xa
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & (2**64 - 1)


check = MT64(5489)
for _ in range(9999):
    check.next()
print("mt19937_64 10000th output matches the standard:", check.next() == 9981545732273789042)

rng = MT64(42)


def uniform_int(lo, hi):
    span = hi - lo + 1
    reject_below = (2**64 - span) % span
    while True:
        x = rng.next()
        if x >= reject_below:
            return lo + x % span


arrival = 0.0
for i in range(3):
    if i > 0:
        arrival += -math.log1p(-((rng.next() >> 11) * 2.0**-53)) / 4.0
    print(repr(arrival), uniform_int(32, 256), uniform_int(16, 128))
