/* cargo xtask msvc: a stand-in for the C library's stdlib.h (no file from Microsoft):
 * declarations of the functions Wine's ucrtbase.dll exports. */
#pragma once
#include <stddef.h>
char *getenv(const char *name);
int atoi(const char *s);
long strtol(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
__declspec(noreturn) void exit(int code);
__declspec(noreturn) void abort(void);
