/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MPA connection setup as a sans-I/O state machine (RFC 5044 section
 * 7.1, RFC 6581): one side's Request or Reply out, the peer's in, the
 * negotiated result. The glue feeds received bytes and writes what
 * iw_mpa_hs_tx() hands out; timers are the glue's (opts.timeout_ms). Nothing
 * here allocates: an iw_mpa_hs is embedded in the connection.
 *
 * The state machine consumes exactly the octets of the peer's frame and no
 * more: any bytes after it in the same read are the first FPDUs and belong
 * to the FPDU decoder (siw once swallowed the first FPDU there).
 *
 * Negotiation rules (../reference/interop.md, RFC 6581; lib/conn/mpa_hs.c has the
 * sources for each):
 *  - Rev: the responder answers with min(Request Rev, opts.rev): a rev-1
 *    Request gets a rev-1 Reply (no RFC 6581 block, no P2P, private data
 *    untouched). The RFC 6581 block is in the Reply iff the Reply is rev 2,
 *    the Request had the block and opts.enhanced. The initiator refuses a
 *    Reply whose Rev is above its Request's (LLP 0x04), and takes a Reply
 *    without the block (rev 1, a rev-1-only responder) as plain RFC 5044:
 *    no P2P, no RTR, IRD/ORD unchanged.
 *  - CRC is on if either side's frame has C. A responder sets C in its Reply
 *    if opts.crc or the Request had C.
 *  - Each side's M asks the other to send markers towards it: markers_rx is
 *    our own M, markers_tx the peer's M. A peer's M with !opts.accept_markers
 *    is refused: the responder answers with a Reject (as siw does), the
 *    initiator fails (err_term 0: close, no TERMINATE).
 *  - RTR: the initiator offers opts.rtr_offer (with A set, rev 2 enhanced
 *    with opts.p2p). The responder echoes A (RFC 6581 9.2: MUST) and picks
 *    WRITE, else READ, else SEND among offer & opts.rtr_accept, or with
 *    opts.rtr_force its own first choice in rtr_accept regardless of the
 *    offer (Chelsio). No common RTR, or A requested from a responder without
 *    opts.p2p: the responder answers with a Reject and accept() fails with
 *    err_term IW_TERM_LLP_NO_RTR (the initiator sees IW_HS_EV_REJECT). An
 *    initiator that gets a Reply without A, or with no RTR it offered, fails
 *    with IW_TERM_LLP_NO_RTR (0x07); a Reply with several RTR bits is taken
 *    leniently (the best one we offered, WRITE > READ > SEND).
 *  - IRD/ORD are negotiated down ("relaxed", as siw, iw_cxgb4 and irdma do):
 *      responder:  ord = min(my_ord, peer IRD)   ird = min(my_ird, peer ORD)
 *      initiator:  ord = min(my_ord, peer IRD)   ird = peer ORD, which must
 *                  be <= my_ird, else LLP 0x06 (insufficient IRD)
 *    A peer value of 0x3FFF means "no negotiation" (Intel nes/i40iw/irdma)
 *    and leaves our corresponding value unchanged. With the READ RTR the
 *    responder's IRD and the initiator's ORD are at least 1: the RTR is a
 *    Read Request (irdma/iw_cxgb4 raise IRD 0 to 1, siw forces ORD >= 1).
 *    The responder's Reply carries the negotiated values. Without the RFC
 *    6581 block both sides keep their own values.
 *
 * Failures: -EPROTO sets err (wire reason, IW_WERR_NONE for negotiation
 * failures), err_term (the TERMINATE triple that describes it, 0 for none)
 * and err_msg. On the initiator, after a failed Reply, the glue sends a
 * TERMINATE with err_term (if non-zero) and closes, as siw and iw_cxgb4 do.
 * On the responder a bad Request is closed without a Reply (siw); err_term
 * (LLP 0x04) may be sent as a TERMINATE. When accept() fails, a Reject is
 * waiting in iw_mpa_hs_tx(): flush it, then close.
 */
#ifndef IW_MPA_HS_H
#define IW_MPA_HS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/cm.h"
#include "iwarp/wire.h"

enum iw_mpa_hs_state {
	IW_HS_SEND_REQ = 1, /* initiator: Request pending/being written, then WAIT_REP */
	IW_HS_WAIT_REP,     /* initiator: waiting for the Reply */
	IW_HS_WAIT_REQ,     /* responder: waiting for the Request */
	IW_HS_HAVE_REQ,     /* responder: Request parsed, application decides */
	IW_HS_SEND_REP,     /* responder: Reply (or Reject) pending/being written */
	IW_HS_DONE,         /* negotiated: FPDUs may flow (after the RTR rules) */
	IW_HS_REJECTED,     /* a Reject was sent or received */
	IW_HS_FAILED,       /* protocol error: see err */
};

/* Results of iw_mpa_hs_recv. */
enum {
	IW_HS_EV_NONE = 0,
	IW_HS_EV_REQUEST,  /* responder: the Request is in (peer), decide */
	IW_HS_EV_REPLY,    /* initiator: the Reply is in and accepted: DONE */
	IW_HS_EV_REJECT,   /* initiator: the Reply had R set: REJECTED */
};

/* The negotiated connection parameters. */
struct iw_mpa_result {
	uint8_t rev;
	bool enhanced;    /* RFC 6581 block exchanged */
	bool p2p;         /* RTR follows (flag A on both frames) */
	uint8_t rtr;      /* the one IW_RTR_* chosen, 0 without P2P */
	bool crc;
	bool markers_tx;  /* we insert markers (the peer asked) */
	bool markers_rx;  /* the peer inserts markers (we asked) */
	uint16_t ird;     /* Read Requests we must serve at once */
	uint16_t ord;     /* Read Requests we may have outstanding */
};

struct iw_mpa_hs {
	bool initiator;
	enum iw_mpa_hs_state state;
	/* Copied at init. A responder's glue may replace it between
	 * IW_HS_EV_REQUEST and accept/reject (iw_conn_param.mpa): the
	 * responder's choices are made there. */
	struct iw_mpa_opts opts;
	uint16_t my_ird, my_ord;
	/* outbound frame, and what it says (pd points into tx) */
	uint8_t tx[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	size_t tx_len, tx_off;
	bool tx_reject;        /* the frame in tx is a Reject */
	struct iw_mpa_frame local;
	/* inbound frame being gathered */
	uint8_t rx[IW_MPA_FRAME_HDR_LEN + IW_MPA_PD_MAX];
	size_t rx_got;
	/* The peer's frame, once complete (IW_HS_EV_*). pd is the ULP private
	 * data only (after any RFC 6581 block) and points into rx; ird/ord/p2p/
	 * rtr are the peer's raw RFC 6581 values. */
	struct iw_mpa_frame peer;
	struct iw_mpa_result res;
	/* failure */
	enum iw_wire_err err;  /* wire reason, IW_WERR_NONE if not a parse error */
	uint16_t err_term;     /* TERMINATE triple that describes it (0 if none) */
	const char *err_msg;   /* a sentence naming the problem */
};

/* Start a handshake. opts NULL means iw_mpa_opts_default(). The initiator's
 * Request (with my_ird/my_ord and the ULP private data) is built at once and
 * waits in iw_mpa_hs_tx. A responder ignores my_ird, my_ord and pd: they
 * are given to accept. Returns 0, -EINVAL (NULL hs, options out of range:
 * rev not 1/2, unknown RTR bits, pd_cap > 512, IRD/ORD > 0x3FFF, pd_len
 * without pd, P2P with no RTR offered) or -EMSGSIZE (private data above
 * opts->pd_cap, 0 meaning 512, with the RFC 6581 block counted). On failure
 * hs is left in state FAILED. */
int iw_mpa_hs_init(struct iw_mpa_hs *hs, bool initiator, const struct iw_mpa_opts *opts,
		   uint16_t my_ird, uint16_t my_ord, const void *pd, uint16_t pd_len);

/* Feed received octets (any segmentation, one at a time included).
 * *consumed says how many were used: never more than the peer's frame.
 * Returns IW_HS_EV_*, -EPROTO (bad frame, incompatible negotiation:
 * err/err_term/err_msg set, state FAILED; sticky: later calls consume
 * nothing and return -EPROTO again) or -EINVAL (NULL arguments). Bytes fed
 * in a state that expects none (HAVE_REQ, SEND_REP, DONE, REJECTED) are not
 * consumed (IW_HS_EV_NONE): once DONE they are FPDUs for the decoder; octets
 * that follow a Request before the Reply is out are an initiator's protocol
 * violation (RFC 5044: it sends nothing until the Reply). The initiator
 * also takes the Reply while its Request is still being written; the rest
 * of the Request stays in iw_mpa_hs_tx and must be written first. */
int iw_mpa_hs_recv(struct iw_mpa_hs *hs, const uint8_t *in, size_t len, size_t *consumed);

/* Responder: accept with our IRD/ORD and ULP private data: builds the Reply,
 * fills res, state SEND_REP (DONE once written). -EINVAL in the wrong state,
 * on the initiator, IRD/ORD > 0x3FFF or pd_len without pd (nothing changes);
 * -EMSGSIZE (nothing changes, a smaller pd may be tried); -EPROTO when
 * negotiation is impossible (no common RTR: err_term IW_TERM_LLP_NO_RTR;
 * markers refused: err_term 0): a Reject without private data is built
 * instead, err set, state SEND_REP then REJECTED once written. */
int iw_mpa_hs_accept(struct iw_mpa_hs *hs, uint16_t my_ird, uint16_t my_ord, const void *pd,
		     uint16_t pd_len);
/* Responder: reject with ULP private data (R set; echoes the Rev; with the
 * RFC 6581 block 00 00 00 00 if the Reply would carry one). State SEND_REP,
 * REJECTED once written. -EINVAL (wrong state), -EMSGSIZE. */
int iw_mpa_hs_reject(struct iw_mpa_hs *hs, const void *pd, uint16_t pd_len);

/* Outbound octets not yet written (NULL/0 when none), and how many the
 * socket took (more than pending is clamped). Writing the whole Request
 * moves SEND_REQ to WAIT_REP; the whole Reply moves SEND_REP to DONE (or
 * REJECTED for a Reject). */
const uint8_t *iw_mpa_hs_tx(const struct iw_mpa_hs *hs, size_t *len);
void iw_mpa_hs_tx_done(struct iw_mpa_hs *hs, size_t n);

/* "SEND_REQ", "WAIT_REP", ... "FAILED"; "unknown" otherwise. */
const char *iw_mpa_hs_state_str(enum iw_mpa_hs_state s);

#endif
