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
//! a page the code touches is still mapped from the page cache, only its neighbours are
//! not). Every command gets both; `serve --transparent-huge-pages` turns the pages back on
//! ([`allow_transparent_huge_pages`]).

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
    // SAFETY: the callback only reads the program headers the loader hands it, for the
    // duration of the call, and calls madvise on page-aligned ranges of mapped segments.
    unsafe {
        libc::dl_iterate_phdr(Some(no_read_around), std::ptr::null_mut());
    }
}

/// `dl_iterate_phdr`'s callback: `MADV_RANDOM` on every loadable segment of the executable
/// (the first object it reports), then stops.
#[cfg(target_os = "linux")]
unsafe extern "C" fn no_read_around(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    _data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: `dl_iterate_phdr` passes a valid `info` for the call's duration.
    let Some(info) = (unsafe { info.as_ref() }) else {
        return 1;
    };
    if info.dlpi_phdr.is_null() {
        return 1;
    }
    const PAGE_BYTES: usize = 4096;
    for index in 0..usize::from(info.dlpi_phnum) {
        // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers.
        let header = unsafe { &*info.dlpi_phdr.add(index) };
        if header.p_type != libc::PT_LOAD {
            continue;
        }
        let start = (info.dlpi_addr as usize).wrapping_add(header.p_vaddr as usize);
        let end = start.wrapping_add(header.p_memsz as usize);
        let aligned = start & !(PAGE_BYTES - 1);
        // SAFETY: the range lies within a segment the loader mapped; MADV_RANDOM changes
        // only the kernel's read-ahead for it, never its contents. An error is harmless.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                end.saturating_sub(aligned),
                libc::MADV_RANDOM,
            );
        }
    }
    // The executable comes first; shared libraries keep the kernel's defaults.
    1
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
