/* hibar_boot.c: hibar-boot, hibard's short-lived PMIx client for `bootstrap: pmix` (Put / Fence /
 * Get of every daemon's endpoint). */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_cli.h"
#include "hbd_boot.h"

/*
 * Run by hibard with its inherited PMIx environment, stdin and stdout being pipes to hibard
 * (protocol in daemon/hbd_boot.h). It binds nothing: hibard chose its endpoint. Stderr is
 * hibard's. Exit 0 after END, 1 after ERR.
 */

static int fail_line(const char *what, pmix_status_t st)
{
    const char *uri = getenv("PMIX_SERVER_URI41");
    if (uri == NULL)
        uri = getenv("PMIX_SERVER_URI4");
    if (uri == NULL)
        uri = getenv("PMIX_SERVER_URI3");
    if (uri == NULL)
        uri = getenv("PMIX_SERVER_URI21");
    if (uri == NULL)
        uri = getenv("PMIX_SERVER_URI2");
    printf("ERR %s: %s (PMIx server %s, namespace %s)\n", what, PMIx_Error_string(st),
           uri != NULL ? uri : "(no PMIX_SERVER_URI*)",
           getenv("PMIX_NAMESPACE") != NULL ? getenv("PMIX_NAMESPACE") : "?");
    fflush(stdout);
    return 1;
}

static int get_u32(const pmix_proc_t *p, const char *key, uint32_t *v)
{
    pmix_value_t *val = NULL;
    pmix_status_t st = PMIx_Get(p, key, NULL, 0, &val);
    if (st != PMIX_SUCCESS || val == NULL)
        return -1;
    int rc = 0;
    if (val->type == PMIX_UINT32)
        *v = val->data.uint32;
    else if (val->type == PMIX_UINT16)
        *v = val->data.uint16;
    else if (val->type == PMIX_INT)
        *v = (uint32_t)val->data.integer;
    else
        rc = -1;
    PMIX_VALUE_RELEASE(val);
    return rc;
}

static int put_str(const char *key, const char *s)
{
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = (char *)s;
    pmix_status_t st = PMIx_Put(PMIX_GLOBAL, key, &v);
    return st == PMIX_SUCCESS ? 0 : (int)st;
}

static char *get_str(const pmix_proc_t *p, const char *key, pmix_status_t *st_p)
{
    pmix_value_t *val = NULL;
    char *s = NULL;
    *st_p = PMIx_Get(p, key, NULL, 0, &val);
    if (*st_p == PMIX_SUCCESS && val != NULL && val->type == PMIX_STRING &&
        val->data.string != NULL)
        s = strdup(val->data.string);
    else if (*st_p == PMIX_SUCCESS)
        *st_p = PMIX_ERR_BAD_PARAM;
    if (val != NULL)
        PMIX_VALUE_RELEASE(val);
    return s;
}

int main(int argc, char **argv)
{
    pmix_proc_t me, wild, p;
    pmix_status_t st;
    unsigned timeout = 20;
    char line[HBD_BOOT_LINE_MAX], host[128], addr[64], key[96];
    unsigned port;
    uint32_t size = 0, lrank = 0;
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            timeout = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            return hb_cli_version("hibar-boot");
        } else {
            int help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
            fprintf(help ? stdout : stderr,
                    "usage: hibar-boot [--timeout SEC] (run by hibard, not by hand)\n"
                    "       hibar-boot --help | --version\n");
            return help ? HB_EXIT_OK : HB_EXIT_USAGE;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((st = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS)
        return fail_line("PMIx_Init", st);
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&wild, PMIX_JOB_SIZE, &size) != 0 || size == 0) {
        fail_line("PMIx_Get(PMIX_JOB_SIZE)", PMIX_ERR_NOT_FOUND);
        goto out;
    }
    if (get_u32(&me, PMIX_LOCAL_RANK, &lrank) != 0)
        lrank = 0;
    {
        pmix_status_t hs;
        char *h = get_str(&me, PMIX_HOSTNAME, &hs);
        if (h != NULL)
            snprintf(host, sizeof(host), "%s", h);
        else if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        free(h);
    }
    printf("RANK %u %u %u %s\n", (unsigned)me.rank, (unsigned)size, (unsigned)lrank, host);
    if (fgets(line, sizeof(line), stdin) == NULL ||
        sscanf(line, "EP %63s %u %95s", addr, &port, key) != 3) {
        fprintf(stderr, "hibar-boot: no endpoint from hibard\n");
        goto out;
    }
    snprintf(line, sizeof(line), "%s %u %s %u", host, (unsigned)lrank, addr, port);
    if ((st = put_str("hibar.ep", line)) != 0 ||
        (strcmp(key, "-") != 0 && (st = put_str("hibar.key", key)) != 0)) {
        fail_line("PMIx_Put", st);
        goto out;
    }
    if ((st = PMIx_Commit()) != PMIX_SUCCESS) {
        fail_line("PMIx_Commit", st);
        goto out;
    }
    {
        pmix_info_t info[2];
        bool collect = true;
        int to = (int)timeout;
        PMIX_INFO_CONSTRUCT(&info[0]);
        PMIX_INFO_CONSTRUCT(&info[1]);
        PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
        PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &to, PMIX_INT);
        st = PMIx_Fence(&wild, 1, info, 2);
        PMIX_INFO_DESTRUCT(&info[0]);
        PMIX_INFO_DESTRUCT(&info[1]);
        if (st != PMIX_SUCCESS) {
            char what[128];
            snprintf(what, sizeof(what), "PMIx_Fence of the %u daemons (timeout %u s)",
                     (unsigned)size, timeout);
            fail_line(what, st);
            goto out;
        }
    }
    for (uint32_t r = 0; r < size; r++) {
        PMIX_LOAD_PROCID(&p, me.nspace, r);
        char *ep = get_str(&p, "hibar.ep", &st);
        char h[128], a[64];
        unsigned lr, pt;
        if (ep == NULL || sscanf(ep, "%127s %u %63s %u", h, &lr, a, &pt) != 4) {
            char what[128];
            snprintf(what, sizeof(what), "PMIx_Get(hibar.ep) of rank %u", (unsigned)r);
            free(ep);
            fail_line(what, ep == NULL ? st : PMIX_ERR_BAD_PARAM);
            goto out;
        }
        free(ep);
        printf("NODE %u %s %u %s %u\n", (unsigned)r, h, lr, a, pt);
    }
    PMIX_LOAD_PROCID(&p, me.nspace, 0);
    char *k = get_str(&p, "hibar.key", &st);
    if (k != NULL)
        printf("KEY %s\n", k);
    free(k);
    printf("END\n");
    rc = 0;
out:
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return rc;
}
