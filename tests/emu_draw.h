// emu_draw.h - what the emulator test programs (tests/*_emu.cu) share: a
// fixed-seed draw of test values, never zero (odd numerators), in
// [-0.999, 0.999] for floating types and [-999, 999] for integers.
#pragma once

#include <type_traits>

template <class T>
T draw(unsigned long long &s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const long long r = (long long)(s >> 33) % 2000 - 1000;
    return std::is_floating_point<T>::value ? T(double(r | 1) / 1000.0) : T(r | 1);
}
