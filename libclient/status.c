/* status.c: hibar_strerror, and the proof that hibar.h's codes are common/'s codes. */
#include "hb_status.h"
#include "hibar.h"

/* hibar.h stays one self-contained file for installed programs, so it spells the codes out
 * itself; the modules below libclient/ return common/'s HB_* codes. Each pair must be equal
 * (a status goes from any module to the caller unchanged): the build stops if one is not. */
#define HB_SAME_CODE(code)                                                                         \
    _Static_assert(HIBAR_##code == HB_##code, "HIBAR_" #code " differs from HB_" #code)
_Static_assert(HIBAR_SUCCESS == HB_OK, "HIBAR_SUCCESS differs from HB_OK");
HB_SAME_CODE(ERR_INVAL);
HB_SAME_CODE(ERR_NOMEM);
HB_SAME_CODE(ERR_TIMEOUT);
HB_SAME_CODE(ERR_PEER_LOST);
HB_SAME_CODE(ERR_UNAVAIL);
HB_SAME_CODE(ERR_IO);
HB_SAME_CODE(ERR_PROTO);
HB_SAME_CODE(ERR_BUSY);
HB_SAME_CODE(ERR_MISMATCH);
HB_SAME_CODE(ERR_CONFIG);
HB_SAME_CODE(ERR_NOT_INIT);
HB_SAME_CODE(ERR_EXISTS);
HB_SAME_CODE(ERR_NOT_FOUND);
HB_SAME_CODE(ERR_PERM);
HB_SAME_CODE(ERR_TRUNCATED);
HB_SAME_CODE(ERR_THREAD);
HB_SAME_CODE(ERR_INTERNAL);
HB_SAME_CODE(ERR_WOULD_BLOCK);
HB_SAME_CODE(ERR_LAST);

const char *hibar_strerror(int status)
{
    return hb_status_str(status);
}
