/* hbd_key.h: the per-cluster CurveZMQ key pair file (two Z85 lines: public, secret; mode 0600). */
#ifndef HBD_KEY_H
#define HBD_KEY_H

#include <stdint.h>

int hbd_key_generate(const char *path);
int hbd_key_load(const char *path, uint8_t pub[32], uint8_t sec[32], char pub_z85[41]);

#endif
