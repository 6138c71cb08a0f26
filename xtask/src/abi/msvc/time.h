/* cargo xtask msvc: a stand-in for the C library's time.h. */
#pragma once
typedef long long time_t;
struct timespec { time_t tv_sec; long tv_nsec; };
time_t time(time_t *t);
