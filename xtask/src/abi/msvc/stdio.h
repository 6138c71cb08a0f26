/* cargo xtask msvc: a stand-in for the C library's stdio.h: the formatted functions are
 * inline over ucrtbase.dll's __stdio_common_* entry points, as the UCRT's
 * own header has them. */
#pragma once
#include <stddef.h>
#include <stdarg.h>
typedef struct _iobuf FILE;
FILE *__acrt_iob_func(unsigned index);
#define stdin (__acrt_iob_func(0))
#define stdout (__acrt_iob_func(1))
#define stderr (__acrt_iob_func(2))
#define EOF (-1)
int __stdio_common_vfprintf(unsigned long long options, FILE *f, const char *format, void *locale, va_list args);
int __stdio_common_vsprintf(unsigned long long options, char *buffer, size_t n, const char *format, void *locale, va_list args);
int __stdio_common_vfscanf(unsigned long long options, FILE *f, const char *format, void *locale, va_list args);
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
int fflush(FILE *f);
int fputs(const char *s, FILE *f);
int puts(const char *s);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
char *fgets(char *s, int n, FILE *f);
static __inline int vfprintf(FILE *f, const char *format, va_list a) {
    return __stdio_common_vfprintf(0, f, format, 0, a);
}
static __inline int fprintf(FILE *f, const char *format, ...) {
    va_list a; int r; va_start(a, format); r = vfprintf(f, format, a); va_end(a); return r;
}
static __inline int printf(const char *format, ...) {
    va_list a; int r; va_start(a, format); r = vfprintf(stdout, format, a); va_end(a); return r;
}
/* _CRT_INTERNAL_PRINTF_STANDARD_SNPRINTF_BEHAVIOR (2): C99's snprintf. */
static __inline int vsnprintf(char *s, size_t n, const char *format, va_list a) {
    int r = __stdio_common_vsprintf(2, s, n, format, 0, a);
    return r < 0 ? -1 : r;
}
static __inline int snprintf(char *s, size_t n, const char *format, ...) {
    va_list a; int r; va_start(a, format); r = vsnprintf(s, n, format, a); va_end(a); return r;
}
static __inline int fscanf(FILE *f, const char *format, ...) {
    va_list a; int r; va_start(a, format); r = __stdio_common_vfscanf(0, f, format, 0, a); va_end(a); return r;
}
