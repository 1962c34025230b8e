//! A table of 64-bit keys (hashes already) to 32-bit values for the capture thread: open
//! addressing in 16-byte slots, so a lookup touches one cache line, and a prefetch of that line
//! for a batch of keys lets their misses overlap.
//!
//! Why not `HashMap`: its control bytes and its entries are two arrays, two cache misses a
//! lookup; the capture thread looks up every SYN in a table far larger than the caches it
//! finds cold (it shares the load's CPU), and that lookup was 1.1 % of that CPU at 40,000
//! SYN/s (`perf record -C 1`, issue 44). Keys are never removed one by one, only all at once
//! (a generation rotating), so linear probing needs no tombstones.
//!
//! The slots live in memory the kernel may back with 2 MB pages (`MADV_HUGEPAGE`): the table
//! spans hundreds of 4 KB pages, and a lookup that misses the TLB as well as the cache waits
//! for a page walk, which a prefetch does not hide (the page walkers are few). A table's first
//! insert maps one huge page of slots (2 MB resident where the kernel backs it so), where a
//! `HashMap` started small.

/// One entry; key 0 marks an empty slot (a key that hashes to 0 is stored as 1).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(16))]
struct Slot {
    key: u64,
    val: u32,
}

/// The slots a new table starts with: one huge page of them (grown by doubling past half
/// full).
const FIRST_SLOTS: usize = HUGE / std::mem::size_of::<Slot>();

#[derive(Debug, Default)]
pub struct SeenTable {
    slots: Slots,
    len: usize,
}

fn stored(key: u64) -> u64 {
    key.max(1)
}

impl SeenTable {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn home(&self, key: u64) -> usize {
        // The key is a hash: its low bits spread as well as any.
        key as usize & (self.slots.len() - 1)
    }

    /// The slot holding `key`, or the empty one where it would go.
    fn find(&self, key: u64) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            match self.slots[i].key {
                0 => return (i, false),
                k if k == key => return (i, true),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: u64) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let key = stored(key);
        match self.find(key) {
            (i, true) => Some(self.slots[i].val),
            _ => None,
        }
    }

    /// Sets `key` to `val`.
    pub fn insert(&mut self, key: u64, val: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let key = stored(key);
        let (i, found) = self.find(key);
        self.slots[i] = Slot { key, val };
        self.len += usize::from(!found);
    }

    /// Empties the table, keeping its slots (the next generation fills as many). Writing the
    /// zeros is once a generation (at most 32 MB at a million SYNs: a few ms in the tens of
    /// seconds such a generation takes), and keeps the pages mapped for the next one.
    pub fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(Slot::default());
            self.len = 0;
        }
    }

    /// Asks the CPU for the cache line `key`'s lookup starts at, without waiting for it.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        if self.len == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let p = &self.slots[self.home(stored(key))] as *const Slot as *const i8;
            // SAFETY: a prefetch is a hint: it never faults, reads nothing and writes nothing;
            // the pointer is to a live slot besides.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
    }

    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, Slots::zeroed(n));
        for s in old.iter().filter(|s| s.key != 0) {
            let (i, _) = self.find(s.key);
            self.slots[i] = *s;
        }
    }
}

/// A huge page: the unit the slots are allocated in.
const HUGE: usize = 2 << 20;

/// Zeroed slots in an anonymous mapping aligned to [`HUGE`] and advised as huge-page memory
/// (where the kernel has no transparent huge pages, plain pages: the same table, slower).
#[derive(Debug, Default)]
struct Slots {
    /// The mapping (None: no slots yet).
    map: Option<std::ptr::NonNull<libc::c_void>>,
    map_bytes: usize,
    /// Where the slots begin in it, and how many there are.
    offset: usize,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone, like a Vec's buffer.
unsafe impl Send for Slots {}

impl Slots {
    fn zeroed(len: usize) -> Self {
        let bytes = len * std::mem::size_of::<Slot>();
        // One huge page more than the slots, so an aligned start lies inside.
        let map_bytes = bytes.next_multiple_of(HUGE) + HUGE;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(map_bytes, HUGE).expect("a layout"),
            );
        }
        let offset = (p as usize).next_multiple_of(HUGE) - p as usize;
        // SAFETY: the range lies inside the mapping made above. A refusal (no THP) only
        // leaves it on small pages.
        unsafe {
            libc::madvise(
                p.cast::<u8>().add(offset).cast(),
                bytes.next_multiple_of(HUGE),
                libc::MADV_HUGEPAGE,
            )
        };
        Slots {
            map: std::ptr::NonNull::new(p),
            map_bytes,
            offset,
            len,
        }
    }
}

impl std::ops::Deref for Slots {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        match self.map {
            // SAFETY: `len` zero-initialised (all-zero is a valid Slot) slots, aligned to a
            // huge page, inside the mapping this value owns.
            Some(p) => unsafe {
                std::slice::from_raw_parts(
                    p.as_ptr().cast::<u8>().add(self.offset).cast(),
                    self.len,
                )
            },
            None => &[],
        }
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        match self.map {
            // SAFETY: as in `deref`, borrowed mutably through `self`.
            Some(p) => unsafe {
                std::slice::from_raw_parts_mut(
                    p.as_ptr().cast::<u8>().add(self.offset).cast(),
                    self.len,
                )
            },
            None => &mut [],
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        if let Some(p) = self.map {
            // SAFETY: the mapping made in `zeroed`, unmapped once.
            unsafe { libc::munmap(p.as_ptr(), self.map_bytes) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_overwritten_and_cleared_across_growth() {
        let mut t = SeenTable::default();
        assert_eq!(t.get(5), None);
        let last = FIRST_SLOTS as u64 - 1;
        // Keys that share their home slot probe past each other, those at the last slot wrap
        // round to the first, and there are enough of them to grow the table once.
        let keys: Vec<u64> = (0..100u64)
            .map(|i| i << 40 | 7)
            .chain((0..100u64).map(|i| i << 40 | last))
            .chain((1..=FIRST_SLOTS as u64 / 2).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .chain([0, 1])
            .collect();
        for (n, &k) in keys.iter().enumerate() {
            t.prefetch(k);
            t.insert(k, n as u32);
        }
        assert_eq!(t.slots.len(), 2 * FIRST_SLOTS, "grown once");
        // 0 is stored as 1: the two are one key.
        assert_eq!(t.len(), keys.len() - 1);
        for (n, &k) in keys.iter().enumerate().take(keys.len() - 2) {
            assert_eq!(t.get(k), Some(n as u32), "key {k:#x}");
        }
        assert_eq!(t.get(0), Some(keys.len() as u32 - 1));
        t.insert(7, 99);
        assert_eq!((t.get(7), t.len()), (Some(99), keys.len() - 1));
        assert_eq!(t.get(8 << 20 | 7 | 1 << 63), None);
        t.clear();
        assert!(t.is_empty());
        assert_eq!(t.get(7), None);
        assert_eq!(t.slots.len(), 2 * FIRST_SLOTS, "clearing keeps the slots");
        assert!(t.slots.iter().all(|s| s.key == 0), "and empties every one");
    }
}
