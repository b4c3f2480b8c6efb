#include "dispatch.h"

#include <atomic>
#include <stdexcept>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

namespace nexus::scan {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
struct X86Features {
    bool avx2 = false;
    bool avxvnni = false;
    bool avx512vnni = false;  // with F, BW and VL, which the kernel also uses
};

// CPUID says what the core implements; XGETBV says whether the OS saves the wider registers on a context
// switch. Both are required: a kernel using ymm/zmm state the OS does not preserve corrupts silently.
X86Features detect_x86() {
    X86Features f;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
    const bool osxsave = (ecx >> 27) & 1u;
    const bool avx = (ecx >> 28) & 1u;
    if (!osxsave || !avx) return f;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool os_ymm = (xcr0_lo & 0x6u) == 0x6u;    // XMM and YMM state
    const bool os_zmm = (xcr0_lo & 0xE6u) == 0xE6u;  // plus opmask, ZMM_Hi256, Hi16_ZMM
    if (!os_ymm) return f;

    unsigned max_leaf = __get_cpuid_max(0, nullptr);
    if (max_leaf < 7) return f;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const bool avx2 = (ebx >> 5) & 1u;
    const bool avx512f = (ebx >> 16) & 1u;
    const bool avx512bw = (ebx >> 30) & 1u;
    const bool avx512vl = (ebx >> 31) & 1u;
    const bool avx512vnni = (ecx >> 11) & 1u;
    const unsigned max_subleaf = eax;
    bool avxvnni = false;
    if (max_subleaf >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        avxvnni = (eax >> 4) & 1u;
    }
    f.avx2 = avx2;
    f.avxvnni = avx2 && avxvnni;
    f.avx512vnni = os_zmm && avx512f && avx512bw && avx512vl && avx512vnni;
    return f;
}
#endif

std::vector<IsaKernel> detect() {
    std::vector<IsaKernel> isas;
#if defined(__x86_64__) || defined(_M_X64)
    const X86Features f = detect_x86();
    if (f.avx512vnni) isas.push_back({"avx512vnni", &dot_i8_icelake});
    if (f.avxvnni) isas.push_back({"avxvnni", &dot_i8_alderlake});
    if (f.avx2) isas.push_back({"avx2", &dot_i8_haswell});
#endif
#if defined(__aarch64__)
    isas.push_back({"neon", &dot_i8_neon});  // Advanced SIMD is mandatory on aarch64
#endif
    isas.push_back({"serial", &dot_i8_serial});
    return isas;
}

// Index into available_isas(); an atomic so set_active_isa from one thread and scans on others do not race.
std::atomic<std::size_t> g_active{0};

}  // namespace

const std::vector<IsaKernel>& available_isas() {
    static const std::vector<IsaKernel> isas = detect();  // thread-safe one-time initialisation
    return isas;
}

const IsaKernel& active_isa() {
    return available_isas()[g_active.load(std::memory_order_relaxed)];
}

const IsaKernel* find_isa(std::string_view name) {
    for (const IsaKernel& k : available_isas()) {
        if (name == k.name) return &k;
    }
    return nullptr;
}

void set_active_isa(std::string_view name) {
    const auto& isas = available_isas();
    for (std::size_t i = 0; i < isas.size(); ++i) {
        if (name == isas[i].name) {
            g_active.store(i, std::memory_order_relaxed);
            return;
        }
    }
    throw std::invalid_argument("ISA '" + std::string(name) + "' is not available on this machine (available: " +
                                available_isa_names() + ")");
}

std::string available_isa_names() {
    std::string names;
    for (const IsaKernel& k : available_isas()) {
        if (!names.empty()) names += ", ";
        names += k.name;
    }
    return names;
}

}  // namespace nexus::scan
