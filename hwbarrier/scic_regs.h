/* scic_regs.h: the SCIC control chip's BAR0 register map (doc/scic-registers.md), shared by
 * the driver (hwb_scic.c) and the device model (scic_model.c). */
#ifndef HB_SCIC_REGS_H
#define HB_SCIC_REGS_H

#include <stdint.h>

#define HB_SCIC_BAR_SIZE 4096u
#define HB_SCIC_ID_VALUE 0x5c1c0001u /* chip 0x5c1c, register-map revision 1 */
#define HB_SCIC_NSYNC 16u

/* Registers (byte offsets into BAR0). All 32-bit except DOORBELL (64-bit). */
#define HB_SCIC_ID 0x000u
#define HB_SCIC_CONFIG 0x004u /* [7:0] node index, [15:8] nodes on cable, [23:16] nsync */
#define HB_SCIC_STATUS 0x008u
#define HB_SCIC_LOST 0x00cu     /* Center: lost ports; port: bit 0 = Center lost */
#define HB_SCIC_DOORBELL 0x010u /* 64-bit, see HB_SCIC_DB_* */
#define HB_SCIC_IRQ_COUNT 0x018u
#define HB_SCIC_HEARTBEAT 0x01cu
#define HB_SCIC_TX_PKTS 0x020u
#define HB_SCIC_RX_PKTS 0x024u
#define HB_SCIC_STOPS_SENT 0x028u
#define HB_SCIC_STARTS_SENT 0x02cu
#define HB_SCIC_RX_OVERRUN 0x030u
#define HB_SCIC_TX_PAUSES 0x034u /* times this board's transmitter was paused by a STOP */
#define HB_SCIC_B_FLAG(s) (0x040u + 4u * (s))
#define HB_SCIC_B_RESULT(s) (0x080u + 4u * (s)) /* [15:0] completions, [23:16] last result */
#define HB_SCIC_B_MASK(s) (0x0c0u + 4u * (s))   /* Center only */
#define HB_SCIC_B_REACH(s) (0x100u + 4u * (s))  /* Center only */
#define HB_SCIC_B_POISON(s) (0x140u + 4u * (s)) /* Center only */

/* STATUS bits. */
#define HB_SCIC_ST_LINK_UP 0x01u
#define HB_SCIC_ST_CENTER 0x02u
#define HB_SCIC_ST_TX_PAUSED 0x04u
#define HB_SCIC_ST_RX_STOPPED 0x08u
#define HB_SCIC_ST_PEER_LOST 0x10u

/* DOORBELL: [31:0] mask, [39:32] sync number, [47:40] flag (1 = arrive), [63] GO. The chip
 * clears the whole register when it has taken the command. */
#define HB_SCIC_DB_GO (1ull << 63)
#define HB_SCIC_DB_ARRIVE 1u
static inline uint64_t hb_scic_db(uint32_t mask, uint32_t sync, uint32_t flag)
{
    return HB_SCIC_DB_GO | (uint64_t)(flag & 0xffu) << 40 | (uint64_t)(sync & 0xffu) << 32 | mask;
}

/* B_RESULT result codes. */
enum { HB_SCIC_RES_OK = 0, HB_SCIC_RES_MISMATCH = 1, HB_SCIC_RES_LOST = 2, HB_SCIC_RES_BADCMD = 3 };
#define HB_SCIC_RES_COUNT(v) ((v)&0xffffu)
#define HB_SCIC_RES_CODE(v) (((v) >> 16) & 0xffu)

/* MMIO accessors: single, ordered accesses (the BAR is uncached memory on real hardware). */
static inline uint32_t hb_scic_rd32(volatile void *bar, uint32_t off)
{
    return __atomic_load_n((volatile uint32_t *)((volatile char *)bar + off), __ATOMIC_ACQUIRE);
}
static inline void hb_scic_wr32(volatile void *bar, uint32_t off, uint32_t v)
{
    __atomic_store_n((volatile uint32_t *)((volatile char *)bar + off), v, __ATOMIC_RELEASE);
}
static inline uint64_t hb_scic_rd64(volatile void *bar, uint32_t off)
{
    return __atomic_load_n((volatile uint64_t *)((volatile char *)bar + off), __ATOMIC_ACQUIRE);
}
static inline void hb_scic_wr64(volatile void *bar, uint32_t off, uint64_t v)
{
    __atomic_store_n((volatile uint64_t *)((volatile char *)bar + off), v, __ATOMIC_SEQ_CST);
}

#endif
