/* hb_sd.h: systemd's readiness protocol (sd_notify(3)) without libsystemd. */
#ifndef HB_SD_H
#define HB_SD_H

/*
 * Send state ("READY=1", "RELOADING=1", "STOPPING=1", "STATUS=...", lines joined by '\n') to
 * the service manager when $NOTIFY_SOCKET names one (a unit with Type=notify); otherwise do
 * nothing. 1 sent, 0 no manager, -1 error (errno).
 */
int hb_sd_notify(const char *state);

#endif
