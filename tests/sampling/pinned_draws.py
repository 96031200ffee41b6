# Recomputes the pinned draws of tests/sampling/sampler_test.cpp
# (sameSeedSameTokensWhateverElseRuns) without the C++ standard library: the
# reference MT19937-64 (Matsumoto & Nishimura), 53 bits -> [0, 1), then the
# id-order walk over probabilities 0.1, 0.2, 0.3, 0.4.
# Command: python3 tests/sampling/pinned_draws.py
# Prints the check of the generator against the C++ standard's required
# 10000th output, then the 8 ids the test pins.
import math
class MT64:
    def __init__(s, seed):
        s.mt=[0]*312; s.mt[0]=seed & (2**64-1)
        for i in range(1,312):
            s.mt[i]=(6364136223846793005*(s.mt[i-1]^(s.mt[i-1]>>62))+i)&(2**64-1)
        s.i=312
    def next(s):
        M=2**64-1; UM=0xFFFFFFFF80000000; LM=0x7FFFFFFF
        if s.i>=312:
            for k in range(312):
                x=(s.mt[k]&UM)|(s.mt[(k+1)%312]&LM)
                xa=x>>1
                if x&1: xa^=0xB5026F5AA96619E9
                s.mt[k]=s.mt[(k+156)%312]^xa
            s.i=0
        x=s.mt[s.i]; s.i+=1
        x^=(x>>29)&0x5555555555555555
        x^=(x<<17)&0x71D67FFFEDA60000
        x^=(x<<37)&0xFFF7EEE000000000
        x^=(x>>43)
        return x&(2**64-1)
r=MT64(5489)
for _ in range(9999): r.next()
print("10000th default:", r.next(), "expected 9981545732273789042")
r=MT64(42); p=[0.1,0.2,0.3,0.4]; out=[]
for _ in range(8):
    u=(r.next()>>11)*2.0**-53; t=u*sum(p); c=0
    for i,x in enumerate(p):
        c+=x
        if t<c: out.append(i); break
print(out)
