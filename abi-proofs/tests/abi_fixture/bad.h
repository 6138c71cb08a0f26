/* A header that the Rust of bad.rs describes wrongly, the way a generator
 * that parsed it differently from the C compiler would (tests/abi_bad_input.rs).
 * Each wrong item must be named by the layout check; the right ones must not. */

/* Packing pragma: bad.rs lacks `packed`. */
#pragma pack(push, 1)
typedef struct lc_packed_st {
    char tag;
    int value;
} lc_packed;
#pragma pack(pop)

/* Platform `long` (8 bytes on LP64): bad.rs reads it as 32 bits. */
typedef struct lc_long_st {
    long count;
    int flags;
} lc_long;

/* Bitfields: bad.rs places `high` one bit too far. */
typedef struct lc_bits_st {
    unsigned int low : 3;
    unsigned int high : 5;
    unsigned int rest;
} lc_bits;

/* Right in bad.rs: an anonymous union, a struct with no tag, a nested named
 * struct, an enum, a macro. */
typedef struct lc_anon_st {
    int kind;
    union {
        int id;
        long long wide;
    };
    struct lc_inner_st {
        short a;
        double b;
    } inner[2];
} lc_anon;

typedef struct {
    unsigned char bytes[3];
} lc_untagged;

/* An anonymous member under a stable name (`anon_handle`, not its first field). */
typedef struct lc_renamed_st {
    union {
        void *ptr;
        int handle;
    };
    int tail;
} lc_renamed;

typedef enum lc_kind_enum {
    LC_KIND_A = 1,
    LC_KIND_B = 0x7fffffff
} lc_kind;

#define LC_RIGHT 7
/* bad.rs says 8. */
#define LC_WRONG 7

/* Right in bad.rs for x86_64 Linux only, as a generator run on an x86_64 host
 * would write it; wrong on any other target, which is how the check shows it
 * compiled and ran the C for the target and not for the host.
 * `va_list` is 24 bytes on x86_64 Linux (SysV), 32 on aarch64 (AAPCS64),
 * 8 on Windows (a `char *`). */
typedef struct lc_target_st {
    int first;
    __builtin_va_list args;
    int last;
} lc_target;

/* Plain `char` is signed on x86_64 (Linux and Windows), unsigned on aarch64 Linux. */
#define LC_PLAIN_CHAR_ONES ((char)-1)
