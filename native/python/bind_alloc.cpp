// Python bindings for the buddy allocator.
//
// Ownership: a Block holds a shared_ptr to its allocator, so the arena outlives every Block (and every
// numpy view, whose base chain ends at a Block). Freeing is checked at the Block level: freeing twice,
// freeing through another allocator, or freeing while numpy views still export the block's memory all
// raise instead of letting a view alias memory that a later alloc hands out.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <utility>
#include <string>

#include "../alloc/buddy.h"
#include "bindings.h"

namespace py = pybind11;
using nexus::alloc::BuddyAllocator;

namespace nexus::python {
namespace {

// A Block returns its memory when the Python object dies (no view can outlive it: every view holds a
// reference to the Block), so an explicit free() is optional. Move-only, so that exactly one object owns
// each buddy block; a moved-from Block has no owner and frees nothing.
struct Block {
    std::shared_ptr<BuddyAllocator> owner;
    std::size_t offset = 0;
    std::size_t size = 0;        // requested bytes: the buffer length numpy sees
    std::size_t block_size = 0;  // the buddy block actually reserved (power of two >= 128)
    bool freed = false;
    Py_ssize_t exports = 0;  // live buffer views (memoryview / numpy); touched only with the GIL held

    Block(std::shared_ptr<BuddyAllocator> o, std::size_t off, std::size_t sz, std::size_t bs)
        : owner(std::move(o)), offset(off), size(sz), block_size(bs) {}
    Block(Block&&) noexcept = default;
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    Block& operator=(Block&&) = delete;
    ~Block() {
        if (owner && !freed) owner->free(offset);  // cannot throw: this object owns a live block
    }

    std::byte* data() const { return owner->base() + offset; }
};

// Buffer protocol by hand (pybind11's def_buffer cannot count releases): a flat, writeable uint8 buffer.
int block_getbuffer(PyObject* self, Py_buffer* view, int flags) {
    Block* b = nullptr;
    try {
        b = &py::cast<Block&>(py::handle(self));
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_BufferError, e.what());
        return -1;
    }
    if (b->freed) {
        PyErr_SetString(PyExc_BufferError, "Block was freed; its memory may belong to another block now");
        return -1;
    }
    if (PyBuffer_FillInfo(view, self, b->data(), static_cast<Py_ssize_t>(b->size), /*readonly=*/0, flags) < 0) {
        return -1;
    }
    ++b->exports;
    return 0;
}

void block_releasebuffer(PyObject* self, Py_buffer* /*view*/) {
    try {
        --py::cast<Block&>(py::handle(self)).exports;
    } catch (const std::exception&) {
        // Unreachable for a Block (the cast only fails on a foreign type); nothing sensible to report here.
    }
}

[[noreturn]] void raise_memory_error(const BuddyAllocator& a, std::size_t nbytes) {
    const auto s = a.stats();
    PyErr_SetString(PyExc_MemoryError, ("BuddyAllocator: no free block for " + std::to_string(nbytes) +
                                        " bytes (capacity " + std::to_string(s.capacity) + ", largest free block " +
                                        std::to_string(s.largest_free_block) + ")")
                                           .c_str());
    throw py::error_already_set();
}

}  // namespace

void bind_alloc(py::module_& m) {
    py::class_<Block>(m, "Block", py::custom_type_setup([](PyHeapTypeObject* heap_type) {
                          heap_type->as_buffer.bf_getbuffer = block_getbuffer;
                          heap_type->as_buffer.bf_releasebuffer = block_releasebuffer;
                          heap_type->ht_type.tp_as_buffer = &heap_type->as_buffer;
                      }),
                      "A block from a BuddyAllocator. Supports the buffer protocol (flat uint8, writeable), so\n"
                      "np.frombuffer(block, dtype) / np.asarray(block) view its memory without copying.")
        .def_property_readonly("offset", [](const Block& b) { return b.offset; }, "Bytes from the arena start.")
        .def_property_readonly("size", [](const Block& b) { return b.size; }, "Requested bytes (buffer length).")
        .def_property_readonly("block_size", [](const Block& b) { return b.block_size; },
                               "Reserved bytes: the power-of-two buddy block (>= 128).")
        .def_property_readonly("address", [](const Block& b) { return reinterpret_cast<std::uintptr_t>(b.data()); },
                               "Virtual address of the first byte (128-byte aligned).")
        .def_property_readonly("freed", [](const Block& b) { return b.freed; },
                               "True after BuddyAllocator.free(); a Block that is never freed explicitly returns\n"
                               "its memory when it is garbage-collected.")
        .def_property_readonly("n_views", [](const Block& b) { return b.exports; },
                               "Live buffer views; free() refuses while this is > 0.")
        .def("__len__", [](const Block& b) { return b.size; })
        .def("__repr__", [](const Block& b) {
            return "<Block offset=" + std::to_string(b.offset) + " size=" + std::to_string(b.size) +
                   " block_size=" + std::to_string(b.block_size) + (b.freed ? " freed" : "") + ">";
        });

    py::class_<BuddyAllocator, std::shared_ptr<BuddyAllocator>>(
        m, "BuddyAllocator",
        "Buddy allocator over one 2 MiB-aligned arena of capacity_bytes (a power of two >= 2 MiB).\n"
        "Blocks are powers of two from 128 bytes; split on alloc, coalesced on free. Thread-safe; alloc and\n"
        "free release the GIL.")
        .def(py::init<std::size_t>(), py::arg("capacity_bytes"))
        .def(
            "alloc",
            [](const std::shared_ptr<BuddyAllocator>& self, py::ssize_t nbytes) {
                if (nbytes <= 0) throw py::value_error("BuddyAllocator.alloc: nbytes must be > 0");
                const auto n = static_cast<std::size_t>(nbytes);
                std::optional<std::size_t> offset;
                {
                    py::gil_scoped_release nogil;
                    offset = self->alloc(n);
                }
                if (!offset) raise_memory_error(*self, n);
                return Block{self, *offset, n, self->block_size_for(n)};
            },
            py::arg("nbytes"), "A Block of at least nbytes. MemoryError when no free block is large enough.")
        .def(
            "free",
            [](const std::shared_ptr<BuddyAllocator>& self, Block& block) {
                if (block.owner != self) throw py::value_error("BuddyAllocator.free: block belongs to another allocator");
                if (block.freed) throw py::value_error("BuddyAllocator.free: block was already freed");
                if (block.exports > 0) {
                    PyErr_SetString(PyExc_BufferError,
                                    ("BuddyAllocator.free: block still has " + std::to_string(block.exports) +
                                     " live buffer view(s) (numpy arrays / memoryviews); delete them first")
                                        .c_str());
                    throw py::error_already_set();
                }
                // Marked while the GIL is held, so a concurrent free of the same Block object fails cleanly.
                block.freed = true;
                py::gil_scoped_release nogil;
                self->free(block.offset);
            },
            py::arg("block"), "Return a block. ValueError on double free or a foreign block; BufferError while\n"
                              "numpy views of it are alive.")
        .def(
            "stats",
            [](const BuddyAllocator& self) {
                const auto s = self.stats();
                py::dict d;
                d["capacity"] = s.capacity;
                d["used"] = s.used;
                d["free"] = s.free;
                d["largest_free_block"] = s.largest_free_block;
                d["n_free_blocks"] = s.n_free_blocks;
                d["n_allocated_blocks"] = s.n_allocated_blocks;
                d["min_block"] = nexus::alloc::kMinBlock;
                return d;
            },
            "dict: capacity, used, free, largest_free_block (bytes), n_free_blocks, n_allocated_blocks, min_block.")
        .def_property_readonly("capacity", &BuddyAllocator::capacity)
        .def_property_readonly("address", [](const BuddyAllocator& a) { return reinterpret_cast<std::uintptr_t>(a.base()); },
                               "Virtual address of the arena (2 MiB aligned).");
}

}  // namespace nexus::python
