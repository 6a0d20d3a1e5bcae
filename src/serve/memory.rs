//! The process's memory settings, made before the first allocation.
//!
//! Why before `main`: of an idle server's resident memory (measured 2026-11-29 with
//! `/proc/PID/smaps_rollup`, `shoal serve --in-memory` after 1.5 s), 6 MiB were three
//! transparent huge pages that mimalloc's first arena got *before* `serve` turned them off,
//! and 11 MiB were pages of the executable mapped by the kernel's fault-around (up to
//! 64 KiB around each page the code touched, read or not). So a constructor in
//! `.init_array`, which the loader runs before Rust's runtime and so before the allocator
//! is first used, turns transparent huge pages off for the process and asks for no
//! read-around on the executable's own segments (`MADV_RANDOM` on each `PT_LOAD` segment;
//! a page the code touches is still read, its neighbours are not read with it; pages
//! already in the page cache are still mapped around it). Every command gets both;
//! `serve --transparent-huge-pages` turns the pages back on
//! ([`allow_transparent_huge_pages`]). Once `serve` listens, [`release_start_up_pages`]
//! unmaps the executable's pages that start-up left mapped.

/// Runs [`at_start`] before `main`, as the loader runs every `.init_array` entry.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static AT_START: extern "C" fn() = at_start;

#[cfg(target_os = "linux")]
extern "C" fn at_start() {
    // SAFETY: PR_SET_THP_DISABLE takes only integer arguments and changes a flag of this
    // process's memory map. Failing (an old kernel) leaves the defaults: nothing to report
    // this early, and `serve` reports it again (`disable_transparent_huge_pages`).
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    no_read_around();
}

/// `MADV_RANDOM` on every loadable segment of the executable: no read-around.
#[cfg(target_os = "linux")]
fn no_read_around() {
    for_each_load_segment(&mut |segment| {
        let aligned = segment.start & !(shoal_vfs::page_size() - 1);
        // SAFETY: the range lies within a segment the loader mapped; MADV_RANDOM changes
        // only the kernel's read-ahead for it, never its contents. An error is harmless.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                segment.end.saturating_sub(aligned),
                libc::MADV_RANDOM,
            );
        }
    });
}

/// Unmaps the pages of the executable's read-only segments (code, constants, unwind
/// tables) that start-up touched: called once the server listens.
///
/// Why: the kernel maps an executable's pages 64 KiB around each one the code reads
/// (fault-around), so parsing the command line of every command and opening the database
/// left about 8 MiB of the executable resident (smaps, 2026-11-29), most of it code never
/// run again. The pages stay in the page cache: the next use of any of them maps it again
/// with a minor fault, and requests map back only the code they run. Only pages still the
/// file's own are unmapped (`/proc/self/pagemap`): one a debugger wrote a breakpoint into
/// is a private copy, and unmapping it would drop the breakpoint.
#[cfg(target_os = "linux")]
pub fn release_start_up_pages() {
    let Ok(pagemap) = std::fs::File::open("/proc/self/pagemap") else {
        return;
    };
    for_each_load_segment(&mut |segment| {
        if segment.writable {
            return;
        }
        // Whole pages inside the segment only: a page shared with a writable neighbour
        // must keep what was written to it.
        let page = shoal_vfs::page_size();
        let start = segment.start.div_ceil(page) * page;
        let end = segment.end / page * page;
        if start < end {
            release_file_pages(&pagemap, start, end, page);
        }
    });
}

#[cfg(not(target_os = "linux"))]
pub fn release_start_up_pages() {}

/// pagemap's flag of a page that is mapped.
#[cfg(target_os = "linux")]
const PAGE_PRESENT: u64 = 1 << 63;
/// pagemap's flag of a page that is the file's own (or shared anonymous memory), not a
/// private copy.
#[cfg(target_os = "linux")]
const PAGE_FROM_FILE: u64 = 1 << 61;

/// `MADV_DONTNEED` on each run of pages in `start..end` that is not a private copy.
#[cfg(target_os = "linux")]
fn release_file_pages(pagemap: &std::fs::File, start: usize, end: usize, page: usize) {
    let Some(flags) = page_flags(pagemap, start, end, page) else {
        // Without the map a private copy cannot be told apart: leave every page.
        return;
    };
    let release = |from: usize, to: usize| {
        if from < to {
            // SAFETY: `from..to` lies inside a read-only segment of the executable and
            // holds no private copy, so every page in it reads back from the file as it
            // was; MADV_DONTNEED only unmaps them. An error leaves them mapped.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED);
            }
        }
    };
    let mut run_start = start;
    for (index, flags) in flags.into_iter().enumerate() {
        let address = start + index * page;
        if flags & PAGE_PRESENT != 0 && flags & PAGE_FROM_FILE == 0 {
            release(run_start, address);
            run_start = address + page;
        }
    }
    release(run_start, end);
}

/// The pagemap entry of each page in `start..end` (page-aligned), or `None` if the map
/// cannot be read.
#[cfg(target_os = "linux")]
fn page_flags(pagemap: &std::fs::File, start: usize, end: usize, page: usize) -> Option<Vec<u64>> {
    use std::os::unix::fs::FileExt;
    const ENTRY_BYTES: usize = 8;
    let mut entries = vec![0u8; (end - start) / page * ENTRY_BYTES];
    let offset = u64::try_from(start / page * ENTRY_BYTES).ok()?;
    pagemap.read_exact_at(&mut entries, offset).ok()?;
    Some(
        entries
            .chunks_exact(ENTRY_BYTES)
            .map(|entry| {
                let mut bytes = [0u8; ENTRY_BYTES];
                bytes.copy_from_slice(entry);
                u64::from_ne_bytes(bytes)
            })
            .collect(),
    )
}

/// A loadable segment of the executable, as mapped: `start..end` in bytes of the address
/// space, not rounded to pages.
#[cfg(target_os = "linux")]
struct LoadSegment {
    start: usize,
    end: usize,
    writable: bool,
}

/// Calls `visit` with each loadable segment of the executable (the first object
/// `dl_iterate_phdr` reports; shared libraries are left alone). Allocates nothing, so
/// `at_start` may use it before the allocator is set up.
#[cfg(target_os = "linux")]
fn for_each_load_segment(visit: &mut dyn FnMut(LoadSegment)) {
    let mut visit = visit;
    // SAFETY: the callback only reads the program headers the loader hands it, for the
    // duration of the call; `data` is `visit`, alive until `dl_iterate_phdr` returns.
    unsafe {
        libc::dl_iterate_phdr(
            Some(visit_executable_segments),
            (&raw mut visit).cast::<libc::c_void>(),
        );
    }
}

/// `dl_iterate_phdr`'s callback for [`for_each_load_segment`]: stops after the first object.
#[cfg(target_os = "linux")]
unsafe extern "C" fn visit_executable_segments(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: `dl_iterate_phdr` passes a valid `info` for the call's duration, and `data`
    // is the `&mut dyn FnMut` that `for_each_load_segment` passed.
    let (Some(info), Some(visit)) = (unsafe { info.as_ref() }, unsafe {
        data.cast::<&mut dyn FnMut(LoadSegment)>().as_mut()
    }) else {
        return 1;
    };
    if info.dlpi_phdr.is_null() {
        return 1;
    }
    for index in 0..usize::from(info.dlpi_phnum) {
        // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers.
        let header = unsafe { &*info.dlpi_phdr.add(index) };
        if header.p_type != libc::PT_LOAD {
            continue;
        }
        let start = (info.dlpi_addr as usize).wrapping_add(header.p_vaddr as usize);
        visit(LoadSegment {
            start,
            end: start.wrapping_add(header.p_memsz as usize),
            writable: header.p_flags & libc::PF_W != 0,
        });
    }
    // The executable comes first; shared libraries keep the kernel's defaults.
    1
}

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t`, the same in versions 2
/// and 3): how many milliseconds freed memory waits before it goes back to the OS (1000 by
/// default in version 3, the one linked).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Has mimalloc give freed memory back to the OS at once, unless `MIMALLOC_PURGE_DELAY`
/// says otherwise.
///
/// Why: under `shoal bench --workloads PutItem --connections 256` a seventh of the server's
/// resident memory was allocator memory freed but not yet returned (mimalloc's arena: 80 MiB
/// with the default delay of a second, 60 without, smaps 2026-11-29), as handler threads,
/// flushes and compactions free buffers all the time; the same load ran as fast without the
/// delay (docs/PERFORMANCE.md, Memory).
pub fn purge_freed_memory_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets one of mimalloc's integer options, which it reads atomically; any value
    // is valid for this one.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// `serve --transparent-huge-pages`: lets the allocator have them again, as it asks to.
pub fn allow_transparent_huge_pages() {
    // SAFETY: as in `at_start`.
    let answer = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0) };
    if answer != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not turn transparent huge pages back on"
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    extern "C" {
        fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    /// mimalloc's purge delay now, in milliseconds.
    fn purge_delay_ms() -> std::ffi::c_long {
        // SAFETY: reads one of mimalloc's integer options.
        unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }
    }

    #[test]
    fn freed_memory_is_purged_at_once_after_serve_asks() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // mimalloc's default delay until `serve` changes it (an option that is 0 by default
        // would be the wrong one).
        assert_eq!(purge_delay_ms(), 1000);
        purge_freed_memory_at_once();
        assert_eq!(purge_delay_ms(), 0);
    }

    /// The most a page fault maps around the faulting page (the kernel's fault-around
    /// window, 64 KiB by default, aligned to its size).
    const FAULT_AROUND_BYTES: usize = 64 << 10;

    /// Constants in the executable's read-only data, three fault-around windows long so a
    /// whole aligned window lies inside: any other test faulting in its own constants
    /// meanwhile maps the window around them back in, and must not map the page this test
    /// checks (it did, now and then, while tests ran in parallel).
    static CONSTANT_BYTES: [u8; 3 * FAULT_AROUND_BYTES] = [7; 3 * FAULT_AROUND_BYTES];

    fn flags_of(address: usize) -> u64 {
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        let page = shoal_vfs::page_size();
        page_flags(&pagemap, address, address + page, page).unwrap()[0]
    }

    #[test]
    fn start_up_pages_are_unmapped_and_private_copies_kept() {
        let page = shoal_vfs::page_size();
        let constants = std::hint::black_box(CONSTANT_BYTES.as_ptr()) as usize;
        let read_page = constants.div_ceil(FAULT_AROUND_BYTES) * FAULT_AROUND_BYTES;
        let copied_page = read_page + page;
        assert!(read_page + FAULT_AROUND_BYTES <= constants + CONSTANT_BYTES.len());
        // SAFETY: `read_page` lies inside CONSTANT_BYTES.
        assert_eq!(
            unsafe { std::ptr::read_volatile(read_page as *const u8) },
            7
        );
        // A private copy, as a debugger's breakpoint makes one: written through a
        // writable window, then read-only again.
        // SAFETY: the page lies inside CONSTANT_BYTES, which no other code reads, and is
        // made read-only again before the test reads it.
        unsafe {
            assert_eq!(
                libc::mprotect(
                    copied_page as *mut libc::c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE
                ),
                0
            );
            std::ptr::write_volatile(copied_page as *mut u8, 9);
            assert_eq!(
                libc::mprotect(copied_page as *mut libc::c_void, page, libc::PROT_READ),
                0
            );
        }
        assert_ne!(flags_of(read_page) & PAGE_PRESENT, 0);
        assert_eq!(flags_of(copied_page) & PAGE_FROM_FILE, 0);

        release_start_up_pages();

        assert_eq!(
            flags_of(read_page) & PAGE_PRESENT,
            0,
            "a page of the file stays mapped"
        );
        assert_ne!(
            flags_of(copied_page) & PAGE_PRESENT,
            0,
            "a private copy was unmapped"
        );
        // SAFETY: both pages lie inside CONSTANT_BYTES.
        unsafe {
            assert_eq!(std::ptr::read_volatile(copied_page as *const u8), 9);
            assert_eq!(std::ptr::read_volatile(read_page as *const u8), 7);
        }
    }
}
