/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA connection setup (RFC 5044 7.1 + RFC 6581) as a sans-I/O state
 * machine over the frame codec of mpa_frame.c. The rules are summed up in
 * mpa_hs.h; the facts behind each choice, from reading the peers' code
 * (Linux siw_cm.c, iw_cxgb4 cm.c, irdma/i40iw/nes cm.c; see also
 * shared/reference/interop.md and iwarp-wire.md section 2):
 *
 *  - Responder RTR choice. siw picks WRITE if offered, else READ (and WRITE
 *    again for a Send-only offer, which strictly should fail); irdma picks
 *    READ if offered, else WRITE; iw_cxgb4 answers its own module-configured
 *    type without looking at the offer (our rtr_force). We prefer WRITE: a
 *    READ RTR raced siw's reply processing in our interop runs. SEND is only
 *    chosen when rtr_accept allows it (it consumes a posted receive; siw
 *    refuses it). RFC 6581 9.2 (quoted in softiwarp issue #18): "If Control
 *    Flag A is 1 in the MPA Request message, then the responder MUST set
 *    Control Flag A to 1 in the MPA reply message" - so a responder that
 *    cannot honour A rejects rather than answer without it (iw_cxgb4 sent
 *    TERMINATE "RTR mismatch" to an siw that did).
 *  - Initiator RTR check. siw and iw_cxgb4 send TERMINATE LLP/MPA 0x07 (No
 *    Matching RTR Option) when the Reply selects no RTR type they offered.
 *  - IRD/ORD. siw and iw_cxgb4 (RELAXED_IRD_NEGOTIATION, their default):
 *    the responder clamps its ORD to the initiator's IRD and raises its IRD
 *    to the initiator's ORD when its device allows; the initiator takes
 *    ird = Reply ORD (fails with 0x06 "insufficient IRD" if that is above
 *    what it can serve) and ord = Reply IRD (iw_cxgb4: min with its own).
 *    irdma: ord = min(ord, peer IRD) on both sides; the initiator fails if
 *    its IRD is below the Reply's ORD. We have no device limit above the
 *    application's IRD, so the responder never raises its IRD: it
 *    advertises min(my_ird, peer ORD) and a relaxed initiator lowers its ORD
 *    to that. nes/i40iw/irdma treat 0x3FFF in IRD or ORD as "no IRD/ORD
 *    negotiation" and echo 0x3FFF; we take a peer's 0x3FFF as "no limit"
 *    for that value. irdma and iw_cxgb4 raise a responder IRD of 0 to 1 when
 *    the READ RTR is used; siw forces ORD >= 1 in P2P mode.
 *  - Markers. siw rejects a Request with M: Reply flags = Request flags
 *    without M, plus R (0x30 for an enhanced Request without C), and its
 *    still-zero RFC 6581 block, so private data 00 00 00 00. Our Rejects
 *    look the same: R, ENHANCED when the block is present, block all zero
 *    (nobody reads a Reject's block: siw and iw_cxgb4 stop at R). iw_cxgb4's
 *    Reject also has no C.
 *  - Revisions. iw_cxgb4 as initiator accepts a rev-1 Reply to its rev-2
 *    Request (it retries with rev 1 after a reset); siw as responder echoes
 *    the Request's revision; RFC 5044 peers know only rev 1.
 */
#include <errno.h>
#include <string.h>

#include "conn/mpa_hs.h"
#include "base/visibility.h"

#define RTR_ALL (IW_RTR_SEND | IW_RTR_WRITE | IW_RTR_READ)

IW_EXPORT void iw_mpa_opts_default(struct iw_mpa_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->rev = 2;
	opts->enhanced = true;
	opts->p2p = true;
	opts->rtr_offer = IW_RTR_WRITE | IW_RTR_READ;
	/* SEND only when configured: it takes a posted receive (siw refuses it). */
	opts->rtr_accept = IW_RTR_WRITE | IW_RTR_READ;
	opts->rtr_force = false;
	opts->crc = true;
	opts->markers = false;
	opts->accept_markers = true;
	opts->pd_cap = IW_MPA_PD_MAX;
	opts->timeout_ms = IW_MPA_TIMEOUT_MS_DEFAULT;
	opts->peer_siw_term = false;
	opts->wake_ms = 200;
}

const char *iw_mpa_hs_state_str(enum iw_mpa_hs_state s)
{
	switch (s) {
	case IW_HS_SEND_REQ:
		return "SEND_REQ";
	case IW_HS_WAIT_REP:
		return "WAIT_REP";
	case IW_HS_WAIT_REQ:
		return "WAIT_REQ";
	case IW_HS_HAVE_REQ:
		return "HAVE_REQ";
	case IW_HS_SEND_REP:
		return "SEND_REP";
	case IW_HS_DONE:
		return "DONE";
	case IW_HS_REJECTED:
		return "REJECTED";
	case IW_HS_FAILED:
		return "FAILED";
	}
	return "unknown";
}

/* ---------------------------------------------------------------- helpers */

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

/* The preferred RTR in a set: WRITE, then READ, then SEND; 0 if empty. */
static uint8_t rtr_best(unsigned set)
{
	if (set & IW_RTR_WRITE)
		return IW_RTR_WRITE;
	if (set & IW_RTR_READ)
		return IW_RTR_READ;
	if (set & IW_RTR_SEND)
		return IW_RTR_SEND;
	return 0;
}

static size_t pd_cap(const struct iw_mpa_opts *o)
{
	return o->pd_cap ? o->pd_cap : IW_MPA_PD_MAX;
}

static int opts_check(const struct iw_mpa_opts *o)
{
	if (o->rev != 1 && o->rev != 2)
		return -EINVAL;
	if ((o->rtr_offer | o->rtr_accept) & ~RTR_ALL)
		return -EINVAL;
	if (o->pd_cap > IW_MPA_PD_MAX)
		return -EINVAL;
	return 0;
}

static int fail(struct iw_mpa_hs *hs, enum iw_wire_err err, uint16_t term, const char *msg)
{
	hs->state = IW_HS_FAILED;
	hs->err = err;
	hs->err_term = term;
	hs->err_msg = msg;
	return -EPROTO;
}

/* Encode f into tx; local becomes f with pd pointing at the copy in tx. */
static int put_frame(struct iw_mpa_hs *hs, const struct iw_mpa_frame *f, bool reject)
{
	int n = iw_mpa_frame_build(hs->tx, sizeof(hs->tx), f, pd_cap(&hs->opts));

	if (n < 0)
		return n;
	hs->tx_len = (size_t)n;
	hs->tx_off = 0;
	hs->tx_reject = reject;
	hs->local = *f;
	hs->local.pd = f->pd_len ? hs->tx + (size_t)n - f->pd_len : NULL;
	return 0;
}

/* ------------------------------------------------------------------ init */

static int build_request(struct iw_mpa_hs *hs, const void *pd, uint16_t pd_len)
{
	const struct iw_mpa_opts *o = &hs->opts;
	bool enh = o->rev == 2 && o->enhanced;
	struct iw_mpa_frame f = {
		.kind = IW_MPA_REQUEST,
		.rev = o->rev,
		.flags = (uint8_t)((o->markers ? IW_MPA_FLAG_M : 0) | (o->crc ? IW_MPA_FLAG_C : 0) |
				   (enh ? IW_MPA_FLAG_ENHANCED : 0)),
		.p2p = enh && o->p2p,
		.rtr = enh && o->p2p ? o->rtr_offer : 0,
		.ird = enh ? hs->my_ird : 0,
		.ord = enh ? hs->my_ord : 0,
		.pd = pd,
		.pd_len = pd_len,
	};

	/* A alone announces an RTR of no type: RFC 6581 wants one or more. */
	if (f.p2p && !f.rtr)
		return -EINVAL;
	return put_frame(hs, &f, false);
}

int iw_mpa_hs_init(struct iw_mpa_hs *hs, bool initiator, const struct iw_mpa_opts *opts,
		   uint16_t my_ird, uint16_t my_ord, const void *pd, uint16_t pd_len)
{
	int rc;

	if (!hs)
		return -EINVAL;
	memset(hs, 0, sizeof(*hs));
	hs->initiator = initiator;
	hs->state = IW_HS_FAILED;
	hs->err_msg = "handshake not initialised";
	if (opts)
		hs->opts = *opts;
	else
		iw_mpa_opts_default(&hs->opts);
	rc = opts_check(&hs->opts);
	if (rc)
		return rc;
	if (!initiator) {
		hs->err_msg = NULL;
		hs->state = IW_HS_WAIT_REQ;
		return 0;
	}
	if (my_ird > IW_MPA_IRD_ORD_MAX || my_ord > IW_MPA_IRD_ORD_MAX || (pd_len && !pd))
		return -EINVAL;
	hs->my_ird = my_ird;
	hs->my_ord = my_ord;
	rc = build_request(hs, pd, pd_len);
	if (rc)
		return rc;
	hs->err_msg = NULL;
	hs->state = IW_HS_SEND_REQ;
	return 0;
}

/* --------------------------------------------------------- initiator side */

/* The Reply is complete and parsed into hs->peer. */
static int on_reply(struct iw_mpa_hs *hs)
{
	const struct iw_mpa_frame *req = &hs->local, *rep = &hs->peer;
	bool req_enh = iw_mpa_frame_enhanced(req), rep_enh = iw_mpa_frame_enhanced(rep);
	bool enh = req_enh && rep_enh;
	struct iw_mpa_result r = {0};

	if (rep->flags & IW_MPA_FLAG_R) {
		hs->state = IW_HS_REJECTED;
		return IW_HS_EV_REJECT;
	}
	if (rep->rev > req->rev)
		return fail(hs, IW_WERR_MPA_REV, iw_wire_err_term(IW_WERR_MPA_REV),
			    "MPA Reply revision is above the Request's");

	r.rev = rep->rev;
	r.enhanced = enh;
	r.ird = hs->my_ird;
	r.ord = hs->my_ord;
	if (rep_enh && rep->p2p && !req->p2p)
		return fail(hs, IW_WERR_NONE, IW_TERM_LLP_NO_RTR,
			    "MPA Reply selects peer-to-peer mode (A) the Request did not offer");
	if (req->p2p && rep_enh) {
		/* A Reply without the block (rev 1) is an RFC 5044 responder:
		 * no RTR, the initiator simply sends first. With the block, A
		 * must be echoed and one offered type chosen (RFC 6581 9.2). */
		if (!rep->p2p)
			return fail(hs, IW_WERR_NONE, IW_TERM_LLP_NO_RTR,
				    "MPA Reply lacks flag A (peer-to-peer) the Request set");
		r.rtr = rtr_best(rep->rtr & req->rtr);
		if (!r.rtr)
			return fail(hs, IW_WERR_NONE, IW_TERM_LLP_NO_RTR,
				    "MPA Reply selects no RTR type the Request offered");
		r.p2p = true;
	}
	if ((rep->flags & IW_MPA_FLAG_M) && !hs->opts.accept_markers)
		return fail(hs, IW_WERR_NONE, 0,
			    "MPA Reply asks for markers and accept_markers is off");
	if (enh) {
		if (rep->ord != IW_MPA_IRD_ORD_MAX) {
			if (rep->ord > hs->my_ird)
				return fail(hs, IW_WERR_NONE, IW_TERM_LLP_IRD,
					    "MPA Reply ORD is above our IRD (insufficient IRD)");
			r.ird = rep->ord;
		}
		r.ord = min16(hs->my_ord, rep->ird); /* 0x3FFF: ours stays */
		if (r.rtr == IW_RTR_READ && r.ord == 0)
			r.ord = 1; /* the READ RTR itself is a Read Request */
	}
	struct iw_mpa_framing fr;
	iw_mpa_framing(&fr, req->flags, rep->flags);
	r.crc = fr.crc;
	r.markers_rx = fr.markers_to_req;
	r.markers_tx = fr.markers_to_rep;
	hs->res = r;
	hs->state = IW_HS_DONE;
	return IW_HS_EV_REPLY;
}

/* ------------------------------------------------------------------ recv */

static bool expects_frame(const struct iw_mpa_hs *hs)
{
	if (hs->initiator)
		return hs->state == IW_HS_SEND_REQ || hs->state == IW_HS_WAIT_REP;
	return hs->state == IW_HS_WAIT_REQ;
}

int iw_mpa_hs_recv(struct iw_mpa_hs *hs, const uint8_t *in, size_t len, size_t *consumed)
{
	enum iw_mpa_kind kind;
	size_t used = 0;

	if (consumed)
		*consumed = 0;
	if (!hs || (!in && len))
		return -EINVAL;
	if (hs->state == IW_HS_FAILED)
		return -EPROTO;
	if (!expects_frame(hs))
		return IW_HS_EV_NONE;

	kind = hs->initiator ? IW_MPA_REPLY : IW_MPA_REQUEST;
	for (;;) {
		struct iw_mpa_frame f;
		enum iw_wire_err why = IW_WERR_NONE;
		size_t need = 0, take;
		int rc;

		/* Re-parse what is gathered: each check runs as soon as its
		 * octets are in, and -EAGAIN says how many the frame needs,
		 * so we never take an octet beyond it. */
		rc = iw_mpa_frame_parse(&f, &need, &why, kind, hs->rx, hs->rx_got, 0);
		if (rc == -EAGAIN) {
			if (used == len || need <= hs->rx_got || need > sizeof(hs->rx))
				break;
			take = need - hs->rx_got;
			if (take > len - used)
				take = len - used;
			memcpy(hs->rx + hs->rx_got, in + used, take);
			hs->rx_got += take;
			used += take;
			continue;
		}
		if (consumed)
			*consumed = used;
		if (rc < 0)
			return fail(hs, why, iw_wire_err_term(why),
				    hs->initiator ? "malformed MPA Reply" : "malformed MPA Request");
		hs->peer = f; /* pd points into hs->rx, which stays put */
		if (hs->initiator)
			return on_reply(hs);
		hs->state = IW_HS_HAVE_REQ;
		return IW_HS_EV_REQUEST;
	}
	if (consumed)
		*consumed = used;
	return IW_HS_EV_NONE;
}

/* --------------------------------------------------------- responder side */

/* Rev and block of our answer to the Request in hs->peer. */
static void answer_shape(const struct iw_mpa_hs *hs, uint8_t *rev, bool *enh)
{
	const struct iw_mpa_frame *req = &hs->peer;

	*rev = req->rev < hs->opts.rev ? req->rev : hs->opts.rev;
	*enh = *rev == 2 && iw_mpa_frame_enhanced(req) && hs->opts.enhanced;
}

static int build_reject(struct iw_mpa_hs *hs, const void *pd, uint16_t pd_len)
{
	struct iw_mpa_frame f = {.kind = IW_MPA_REPLY, .pd = pd, .pd_len = pd_len};
	bool enh;
	int rc;

	answer_shape(hs, &f.rev, &enh);
	f.flags = (uint8_t)(IW_MPA_FLAG_R | (enh ? IW_MPA_FLAG_ENHANCED : 0));
	rc = put_frame(hs, &f, true);
	if (rc == 0)
		hs->state = IW_HS_SEND_REP;
	return rc;
}

/* Negotiation impossible: answer with a Reject, report why. */
static int refuse(struct iw_mpa_hs *hs, uint16_t term, const char *msg)
{
	int rc = build_reject(hs, NULL, 0);

	if (rc)
		return rc; /* cannot happen: a Reject without ULP data fits */
	hs->err = IW_WERR_NONE;
	hs->err_term = term;
	hs->err_msg = msg;
	return -EPROTO;
}

int iw_mpa_hs_accept(struct iw_mpa_hs *hs, uint16_t my_ird, uint16_t my_ord, const void *pd,
		     uint16_t pd_len)
{
	const struct iw_mpa_opts *o;
	const struct iw_mpa_frame *req;
	struct iw_mpa_frame f = {.kind = IW_MPA_REPLY, .pd = pd, .pd_len = pd_len};
	struct iw_mpa_result r = {0};
	bool enh;
	int rc;

	if (!hs || hs->initiator || hs->state != IW_HS_HAVE_REQ)
		return -EINVAL;
	if (my_ird > IW_MPA_IRD_ORD_MAX || my_ord > IW_MPA_IRD_ORD_MAX || (pd_len && !pd))
		return -EINVAL;
	o = &hs->opts;
	if (opts_check(o))
		return -EINVAL;
	req = &hs->peer;
	answer_shape(hs, &f.rev, &enh);

	if ((req->flags & IW_MPA_FLAG_M) && !o->accept_markers)
		return refuse(hs, 0, "MPA Request asks for markers and accept_markers is off");
	if (enh && req->p2p) {
		if (o->p2p)
			r.rtr = o->rtr_force ? rtr_best(o->rtr_accept)
					     : rtr_best(req->rtr & o->rtr_accept);
		if (!r.rtr)
			return refuse(hs, IW_TERM_LLP_NO_RTR,
				      "MPA Request offers no RTR type we accept");
		r.p2p = true;
	}

	r.rev = f.rev;
	r.enhanced = enh;
	r.ird = my_ird;
	r.ord = my_ord;
	if (enh) {
		/* A peer's 0x3FFF ("no negotiation") is the largest value, so
		 * min() leaves ours unchanged without a special case. */
		r.ord = min16(my_ord, req->ird);
		r.ird = min16(my_ird, req->ord);
		if (r.rtr == IW_RTR_READ && r.ird == 0)
			r.ird = 1; /* the READ RTR is served from the IRD */
	}
	/* Our Reply says what we ask (C, M); the rule gives the rest. */
	struct iw_mpa_framing fr;
	iw_mpa_framing(&fr, req->flags,
		       (uint8_t)((o->markers ? IW_MPA_FLAG_M : 0) | (o->crc ? IW_MPA_FLAG_C : 0)));
	r.crc = fr.crc;
	r.markers_rx = fr.markers_to_rep;
	r.markers_tx = fr.markers_to_req;

	f.flags = (uint8_t)((r.markers_rx ? IW_MPA_FLAG_M : 0) | (r.crc ? IW_MPA_FLAG_C : 0) |
			    (enh ? IW_MPA_FLAG_ENHANCED : 0));
	f.p2p = r.p2p;
	f.rtr = r.rtr;
	f.ird = enh ? r.ird : 0;
	f.ord = enh ? r.ord : 0;
	rc = put_frame(hs, &f, false);
	if (rc)
		return rc;
	hs->my_ird = my_ird;
	hs->my_ord = my_ord;
	hs->res = r;
	hs->state = IW_HS_SEND_REP;
	return 0;
}

int iw_mpa_hs_reject(struct iw_mpa_hs *hs, const void *pd, uint16_t pd_len)
{
	if (!hs || hs->initiator || hs->state != IW_HS_HAVE_REQ || (pd_len && !pd))
		return -EINVAL;
	if (opts_check(&hs->opts))
		return -EINVAL;
	return build_reject(hs, pd, pd_len);
}

/* -------------------------------------------------------------------- tx */

const uint8_t *iw_mpa_hs_tx(const struct iw_mpa_hs *hs, size_t *len)
{
	size_t n = hs && hs->tx_off < hs->tx_len ? hs->tx_len - hs->tx_off : 0;

	if (len)
		*len = n;
	return n ? hs->tx + hs->tx_off : NULL;
}

void iw_mpa_hs_tx_done(struct iw_mpa_hs *hs, size_t n)
{
	if (!hs || hs->tx_off >= hs->tx_len)
		return;
	if (n > hs->tx_len - hs->tx_off)
		n = hs->tx_len - hs->tx_off;
	hs->tx_off += n;
	if (hs->tx_off < hs->tx_len)
		return;
	if (hs->state == IW_HS_SEND_REQ)
		hs->state = IW_HS_WAIT_REP;
	else if (hs->state == IW_HS_SEND_REP)
		hs->state = hs->tx_reject ? IW_HS_REJECTED : IW_HS_DONE;
}
