/* An OpenCL ICD whose loading never returns: its constructor runs inside
 * clGetPlatformIDs, while the ICD loader holds the dynamic loader's lock. Where
 * HANG_READY names a file, it creates it first: a test then knows the run is
 * hung in loading, not still starting. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void on_load(void) {
    const char *ready = getenv("HANG_READY");
    if (ready) close(open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    for (;;) pause();
}

/* What the ICD loader looks up; never reached. */
int clIcdGetPlatformIDsKHR(unsigned entries, void *platforms, unsigned *count) {
    (void)entries;
    (void)platforms;
    if (count) *count = 0;
    return 0;
}
