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
// pages only partly used: the last page of each pool's range, on every stream that
// allocates (each stream has its own segments). ZeRO-3 allocates on its communication
// streams too: FSDP2's all-gather copy-in, all-gather and reduce-scatter streams, and the
// all-reduce stream of hybrid sharding (FSDPCommContext, torch/distributed/fsdp/
// _fully_shard/_fsdp_param_group.py@002a76fb, whose own comments warn of "inter-stream
// fragmentation"). ASSUMPTION: FSDP2's count for every ZeRO-3 (DeepSpeed's ZeRO-3 has two
// streams of its own, for its gathers and its reductions), the compute stream alone otherwise, and the partial pages at
// the edges of free blocks inside a range left out (a lower bound; each free block at
// the peak can hold up to two, at most 40 MiB).
#pragma once

#include "../core/units.hpp"
#include "../spec/framework_profile.hpp"
#include "../spec/parallel.hpp"

namespace trainperf {

namespace caching_allocator {
// c10/cuda/CUDACachingAllocator.cpp@001074d2: kSmallBuffer, the small pool's segment
// and page; kLargeBuffer, the 20 MiB segment of 1-10 MiB requests and the large pool's
// page with expandable segments.
inline constexpr bytes small_page = mebibytes_of(2);
inline constexpr bytes large_page = mebibytes_of(20);
}  // namespace caching_allocator

// The streams that allocate under layout `p`: the compute stream, and ZeRO-3's three
// communication streams (four with hybrid sharding) where it shards.
constexpr int allocating_streams(const parallel_layout& p) {
    if (p.zero < 3 || p.dp_cp() == 1) return 1;
    return p.shard_replicas() > 1 ? 5 : 4;
}

// The slack over `held`, the allocated peak of what the allocator holds (DeepEP's and
// other buffers allocated outside it excluded), with `streams` allocating streams.
constexpr bytes allocator_slack(const memory_overheads& o, bytes held, int streams) {
    if (held.value() <= 0) return bytes_of(0);
    if (o.expandable_segments) return double(streams) * (caching_allocator::large_page + caching_allocator::small_page);
    return o.fragmentation * held;
}

}  // namespace trainperf
