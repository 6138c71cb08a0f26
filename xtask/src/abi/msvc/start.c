/* Start-up code for x86_64-pc-windows-msvc programs and DLLs linked by
 * `cargo xtask msvc` with lld-link against import libraries of Wine's own
 * DLLs (ucrtbase.dll, vcruntime140.dll): what the static parts of
 * Microsoft's msvcrt.lib and vcruntime.lib would add, none of which is here.
 * Compiled by clang --target=x86_64-pc-windows-msvc three times into
 * cuda_mem_sys_start.lib: the shared part (TLS directory, initialiser
 * bounds, __chkstk, _fltused), -DSTART_EXE (mainCRTStartup) and -DSTART_DLL
 * (_DllMainCRTStartup); the linker takes from the archive only what a
 * program or DLL asks for. */
typedef void (*pvfv)(void);
typedef int (*pifv)(void);
typedef void(__stdcall *tls_callback)(void *, unsigned long, void *);

/* ucrtbase.dll */
int _configure_narrow_argv(int mode);
int _initialize_narrow_environment(void);
int *__p___argc(void);
char ***__p___argv(void);
char ***__p__environ(void);
void _initterm(pvfv *first, pvfv *last);
int _initterm_e(pifv *first, pifv *last);
__declspec(noreturn) void exit(int code);
void _set_app_type(int type);

/* C and C++ initialisers (a constructor is a pointer in .CRT$XCU): the
 * linker sorts the .CRT$X* sections by name, between these bounds. */
#pragma section(".CRT$XIA", long, read)
#pragma section(".CRT$XIZ", long, read)
#pragma section(".CRT$XCA", long, read)
#pragma section(".CRT$XCZ", long, read)

#if !defined(START_EXE) && !defined(START_DLL)
__declspec(allocate(".CRT$XIA")) pifv __xi_a[] = {0};
__declspec(allocate(".CRT$XIZ")) pifv __xi_z[] = {0};
__declspec(allocate(".CRT$XCA")) pvfv __xc_a[] = {0};
__declspec(allocate(".CRT$XCZ")) pvfv __xc_z[] = {0};

/* The TLS directory: lld-link points the image's TLS entry at `_tls_used`;
 * the data of `#[thread_local]`s lies between _tls_start and _tls_end, and
 * TLS callbacks (Rust's std registers one in .CRT$XLB) between the bounds. */
#pragma section(".tls", long, read, write)
#pragma section(".tls$ZZZ", long, read, write)
#pragma section(".CRT$XLA", long, read)
#pragma section(".CRT$XLZ", long, read)
#pragma section(".rdata$T", long, read)
unsigned int _tls_index = 0;
__declspec(allocate(".tls")) char _tls_start = 0;
__declspec(allocate(".tls$ZZZ")) char _tls_end = 0;
__declspec(allocate(".CRT$XLA")) tls_callback __xl_a = 0;
__declspec(allocate(".CRT$XLZ")) tls_callback __xl_z = 0;
struct tls_directory {
    unsigned long long start, end, index, callbacks;
    unsigned int zero_fill, characteristics;
};
__declspec(allocate(".rdata$T")) const struct tls_directory _tls_used = {
    (unsigned long long)&_tls_start, (unsigned long long)&_tls_end,
    (unsigned long long)&_tls_index, (unsigned long long)(&__xl_a + 1), 0, 0,
};

/* Floating point is used (the compiler asks for this symbol where it is). */
int _fltused = 0x9875;

/* The stack probe: touches each page from rsp down to rsp - rax, in order,
 * and moves nothing (the caller subtracts rax from rsp). */
__asm__(".text\n"
        ".globl __chkstk\n"
        "__chkstk:\n"
        "  pushq %rcx\n"
        "  pushq %rax\n"
        "  cmpq $0x1000, %rax\n"
        "  leaq 24(%rsp), %rcx\n"
        "  jb 2f\n"
        "1:\n"
        "  subq $0x1000, %rcx\n"
        "  testq %rcx, (%rcx)\n"
        "  subq $0x1000, %rax\n"
        "  cmpq $0x1000, %rax\n"
        "  ja 1b\n"
        "2:\n"
        "  subq %rax, %rcx\n"
        "  testq %rcx, (%rcx)\n"
        "  popq %rax\n"
        "  popq %rcx\n"
        "  retq\n");

/* The vtable of C++'s `type_info`, which Rust's panic type descriptor
 * points at: vcruntime's static part defines it; only its address is used. */
const void *const cuda_mem_sys_type_info_vftable[2] __asm__("??_7type_info@@6B@") = {0, 0};
#else
extern pifv __xi_a[], __xi_z[];
extern pvfv __xc_a[], __xc_z[];
#endif

#ifdef START_EXE
int main(int argc, char **argv, char **envp);

/* A console program's entry: the arguments and environment as the UCRT
 * keeps them, the initialisers, main, and exit (which flushes stdio). */
int mainCRTStartup(void) {
    _set_app_type(1);          /* _crt_console_app */
    _configure_narrow_argv(1); /* _crt_argv_unexpanded_arguments */
    _initialize_narrow_environment();
    if (_initterm_e(__xi_a, __xi_z) != 0)
        exit(255);
    _initterm(__xc_a, __xc_z);
    exit(main(*__p___argc(), *__p___argv(), *__p__environ()));
}
#endif

#ifdef START_DLL
/* A DLL's entry: its initialisers (constructors) when it is loaded. */
int __stdcall _DllMainCRTStartup(void *module, unsigned long reason, void *reserved) {
    (void)module;
    (void)reserved;
    if (reason == 1) { /* DLL_PROCESS_ATTACH */
        if (_initterm_e(__xi_a, __xi_z) != 0)
            return 0;
        _initterm(__xc_a, __xc_z);
    }
    return 1;
}
#endif
