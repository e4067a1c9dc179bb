// What PyTorch's CUDA caching allocator holds beyond the allocated peak that a failing
// allocation cannot get back: the term `memory_breakdown::fragmentation` counts and
// `total()` adds. Derivation: docs/memory.md §6, "The allocator's slack".
//
// PyTorch's allocator (c10/cuda/CUDACachingAllocator.cpp@001074d2) rounds every request
// to 512 B, packs requests up to 1 MiB into 2 MiB segments, serves 1-10 MiB requests from
// 20 MiB segments and larger ones from segments rounded to 2 MiB, and reuses a freed
// block for any request it can hold, splitting it. When cudaMalloc fails it frees every
// cached block that is not split and retries: what stays out of reach is the free part
// of segments that still hold a live block, which depends on the order of allocations.
// That order is not followed here, so with plain segments the slack is the profile's
// ASSUMPTION, `memory_overheads::fragmentation` × the allocated peak.
//
// With expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; Note
// [Expandable Segments] there) each stream's pool is one range of virtual addresses
// backed by pages of 2 MiB (small pool) and 20 MiB (large pool) as it grows; blocks split
// down to 512 B, and on a failed allocation every page that a free block covers whole is
// unmapped and handed back (ExpandableSegment::unmap). What stays out of reach is the
// pages only partly used: the last page of each pool's range, one of each here.
// ASSUMPTION: one allocating stream, and the partial pages at the edges of free blocks
// inside the range left out (a lower bound; each free block at the peak can hold up to
// two, at most 40 MiB).
#pragma once

#include "../core/units.hpp"
#include "../spec/framework_profile.hpp"

namespace trainperf {

namespace caching_allocator {
// c10/cuda/CUDACachingAllocator.cpp@001074d2: kSmallBuffer, the small pool's segment
// and page; kLargeBuffer, the 20 MiB segment of 1-10 MiB requests and the large pool's
// page with expandable segments.
inline constexpr bytes small_page = mebibytes_of(2);
inline constexpr bytes large_page = mebibytes_of(20);
}  // namespace caching_allocator

// The slack over `held`, the allocated peak of what the allocator holds (DeepEP's and
// other buffers allocated outside it excluded).
constexpr bytes allocator_slack(const memory_overheads& o, bytes held) {
    if (held.value() <= 0) return bytes_of(0);
    if (o.expandable_segments) return caching_allocator::large_page + caching_allocator::small_page;
    return o.fragmentation * held;
}

}  // namespace trainperf
