// Reference kernel: the oracle every other ISA is compared against.
#include "dot_i8.h"
#include "kernel_common.h"

namespace nexus::scan {

void dot_i8_serial(const ScanArgs& args) {
    for (std::size_t i = 0; i < args.n; ++i) {
        const std::int8_t* row_i8 = args.matrix + i * args.d;
        const std::int32_t dot_i32 = dot_i8_scalar(row_i8, args.query, args.d);
        args.out[i] = finish_score(dot_i32, args.row_scales[i], args.query_scale);
    }
}

}  // namespace nexus::scan
