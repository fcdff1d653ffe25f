#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Generate libiwarp's man pages from the public headers.

Every function declared at column 0 in include/iwarp/*.h (static inline
helpers included) gets man/man3/<name>.3, built from the comment block right
above its declaration (or, failing that, the comment that opens the run of
declarations it belongs to, or a comment on the same line). Comments in
verbs.h and cm.h are structured:

    Summary sentence. Description ...

    Returns: what the call returns.
    Errors:
      EINVAL  why (continuation lines indented further)

wire.h's comments are free text; its pages list the errno values the text
names, with the parenthesised reason that follows each, or wire.h's
conventions. man/man7/libiwarp.7 is the overview, and man/Makefile.inc
lists the pages for automake.

The output depends only on the headers and this script (no dates, sorted
lists), so tests/manpages.sh can regenerate into a temporary directory and
require the committed pages to be identical.

    scripts/gen_man.py [--srcdir DIR] [--out DIR]

--out defaults to DIR/man. Python 3 standard library only.
"""

import argparse
import os
import re
import sys

HEADERS = ["verbs.h", "cm.h", "wire.h"]
MISSING = []
MANUAL = "libiwarp Programmer's Manual"
SOURCE = "libiwarp"

# NAME lines for pages whose first sentence is too long or too terse.
SUMMARY = {
    "iw_crc32c": "CRC32c (Castagnoli) of a buffer",
    "iw_crc32c_update": "incremental CRC32c over a buffer",
    "iw_crc32c_iov": "incremental CRC32c over an iovec array",
    "iw_crc32c_final": "finish an incremental CRC32c",
    "iw_term_str": "name a TERMINATE triple",
    "iw_term_layer_str": "name a TERMINATE layer",
    "iw_mpa_frame_parse": "parse an MPA Request or Reply frame",
    "iw_mpa_frame_build": "encode an MPA Request, Reply or Reject frame",
    "iw_mpa_frame_enhanced": "whether an MPA frame carries the RFC 6581 block",
    "iw_mpa_mulpdu": "maximum ULPDU size for an effective MSS",
    "iw_mpa_pad": "pad octets after a ULPDU",
    "iw_fpdu_wire_len": "octets an FPDU occupies on the wire",
    "iw_fpdu_tx_init": "initialise an FPDU sender",
    "iw_fpdu_encode": "frame a DDP segment as one FPDU",
    "iw_rdmap_opcode_str": "name an RDMAP opcode",
    "iw_rdmap_opcode_valid": "whether an RDMAP opcode is defined",
    "iw_rdmap_opcode_tagged": "whether an RDMAP opcode uses tagged DDP",
    "iw_rdmap_opcode_qn": "the untagged queue number of an RDMAP opcode",
    "iw_rdmap_hdr_len": "length of the RDMAP header of an opcode",
    "iw_ddp_tagged": "whether a DDP header is tagged",
    "iw_ddp_last": "whether a DDP header has the Last flag",
    "iw_ddp_opcode": "the RDMAP opcode of a DDP header",
    "iw_ddp_hdr_len": "length of a DDP header",
    "iw_ddp_ctrl": "DDP control octet for version 1",
    "iw_rdmap_ctrl": "RDMAP control octet for version 1",
    "iw_ddp_hdr_build": "encode a DDP header",
    "iw_ddp_hdr_parse": "parse and check a DDP header",
    "iw_rdmap_read_req_build": "encode an RDMA Read Request header",
    "iw_rdmap_read_req_parse": "parse an RDMA Read Request header",
    "iw_rdmap_term_build": "encode a Terminate message payload",
    "iw_rdmap_term_parse": "parse a Terminate message payload",
    "iw_rdmap_term_siw_code": "read a Terminate control word in siw's layout",
    "iw_rdmap_term_siw_hdrct": "read Terminate header flags in siw's layout",
    "iw_rdmap_atomic_req_build": "encode an RFC 7306 Atomic Request header",
    "iw_rdmap_atomic_req_parse": "parse an RFC 7306 Atomic Request header",
    "iw_rdmap_atomic_resp_build": "encode an RFC 7306 Atomic Response header",
    "iw_rdmap_atomic_resp_parse": "parse an RFC 7306 Atomic Response header",
    "iw_fpdu_rx_init": "initialise an FPDU stream decoder",
    "iw_fpdu_rx_next": "decode the next event of an FPDU stream",
    "iw_fpdu_rx_direct_len": "payload octets that may be placed directly",
    "iw_fpdu_rx_direct_done": "account for directly placed payload octets",
    "iw_fpdu_rx_finish": "end an FPDU stream",
    "iw_wire_err_str": "describe a wire parse failure",
    "iw_wire_err_name": "stable name of a wire parse failure",
    "iw_wire_err_from_name": "wire parse failure from its name",
    "iw_wire_err_term": "TERMINATE triple for a wire parse failure",
}

# What a negative errno means in wire.h when its comment gives no reason.
WIRE_ERRNO = {
    "EAGAIN": "More input is needed (in wire.h -EAGAIN never means anything else).",
    "EPROTO": "The input violates the protocol; the reason is reported as an "
              "enum iw_wire_err (see DESCRIPTION).",
    "EBADMSG": "MPA CRC mismatch (IW_WERR_FPDU_CRC).",
    "EINVAL": "An argument is out of range (see DESCRIPTION).",
    "EMSGSIZE": "The data is too large for the format (see DESCRIPTION).",
    "ENOSPC": "The output buffer is too small.",
}

# What "Runs on the loop thread" in a comment means: the headers say it once,
# at the top of cm.h; a page must say it itself (a reader of one page never
# sees the header's opening comment).
LOOP_THREAD_RE = re.compile(r"\bRuns on the loop\s+thread\b")
LOOP_THREAD_NOTE = """
This call runs on the context's loop thread, where every state change of
a CM id happens. Called on the loop thread (from the application's own
event_base callbacks, for instance) it runs inline; called from any other
thread it is queued to the loop and waits for it. So with an application
event_base, the loop must be running (dispatched by another thread)
whenever another thread makes this call, or the call never returns. Until a
libiwarp callback has run, the loop thread is taken to be the thread that
created the context; in convenience mode the loop runs on the context's own
thread.
"""

# Calls that belong in SEE ALSO before the automatic ones.
RELATED = {
    "iw_context_new": ["iw_context_free", "iw_alloc_pd", "iw_cm_create_channel"],
    "iw_reg_mr": ["iw_dereg_mr", "iw_post_send", "iw_post_recv"],
    "iw_alloc_mr": ["iw_inc_rkey", "iw_post_send", "iw_poll_cq", "iw_dereg_mr"],
    "iw_create_cq": ["iw_poll_cq", "iw_req_notify_cq", "iw_get_cq_event", "iw_create_qp"],
    "iw_poll_cq": ["iw_req_notify_cq", "iw_get_cq_event", "iw_ack_cq_events",
                   "iw_wc_status_str", "iw_post_send", "iw_post_recv"],
    "iw_post_send": ["iw_poll_cq", "iw_reg_mr", "iw_post_recv", "iw_cm_create_qp"],
    "iw_post_recv": ["iw_poll_cq", "iw_reg_mr", "iw_post_send", "iw_post_srq_recv"],
    "iw_cm_connect": ["iw_cm_create_id", "iw_cm_create_qp", "iw_cm_get_event",
                      "iw_cm_disconnect", "iw_cm_listen"],
    "iw_cm_listen": ["iw_cm_bind_addr", "iw_cm_accept", "iw_cm_reject", "iw_cm_get_event"],
    "iw_cm_accept": ["iw_cm_listen", "iw_cm_create_qp", "iw_cm_reject", "iw_cm_get_event"],
    "iw_qp_inject_fault": ["iw_get_async_event", "iw_poll_cq", "iw_term_str",
                           "iw_mpa_opts_default"],
}

EXAMPLES = {
    "iw_context_new": r"""
/* Convenience mode: the context runs its own loop thread. */
struct iw_context *ctx = iw_context_new(NULL);
if (!ctx) {
	perror("iw_context_new");
	exit(1);
}

/* Or embed it in the application's libevent loop. */
struct event_base *base = event_base_new();
struct iw_context_attr attr = {.base = base};
struct iw_context *ctx2 = iw_context_new(&attr);
/* ... event_base_dispatch(base) on this thread ... */
""",
    "iw_reg_mr": r"""
size_t len = 1 << 20;
void *buf = malloc(len);
struct iw_mr *mr = iw_reg_mr(pd, buf, len,
			     IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE |
			     IW_ACCESS_REMOTE_READ);
if (!mr) {
	perror("iw_reg_mr");
	return -1;
}
/* Advertise (uintptr_t)buf and mr->rkey to the peer, ... */
int rc = iw_dereg_mr(mr);	/* EBUSY while WRs use it */
if (rc == 0)
	free(buf);
""",
    "iw_create_cq": r"""
struct iw_comp_channel *ch = iw_create_comp_channel(ctx);
struct iw_cq *cq = ch ? iw_create_cq(ctx, 256, NULL, ch, 0) : NULL;
if (!cq) {
	perror("iw_create_cq");
	return -1;
}
""",
    "iw_poll_cq": r"""
/* Wait for and handle one completion: arm, poll, then sleep. */
struct iw_wc wc;
for (;;) {
	int n = iw_poll_cq(cq, 1, &wc);
	if (n < 0)
		return n;	/* -EINVAL */
	if (n == 1)
		break;
	if (iw_req_notify_cq(cq, 0))
		return -1;
	if (iw_poll_cq(cq, 1, &wc) == 1)	/* raced the arming */
		break;
	struct iw_cq *ev_cq;
	void *ev_ctx;
	if (iw_get_cq_event(ch, &ev_cq, &ev_ctx))	/* blocks */
		return -1;
	iw_ack_cq_events(ev_cq, 1);
}
if (wc.status != IW_WC_SUCCESS)
	fprintf(stderr, "wr %llu: %s (TERMINATE 0x%04x)\n",
		(unsigned long long)wc.wr_id, iw_wc_status_str(wc.status),
		wc.vendor_err);
""",
    "iw_post_send": r"""
/* RDMA WRITE len octets of buf (in mr) to the peer's buffer. */
struct iw_sge sge = {.addr = (uintptr_t)buf, .length = len,
		     .lkey = mr->lkey};
struct iw_send_wr wr = {
	.wr_id = 1,
	.sg_list = &sge,
	.num_sge = 1,
	.opcode = IW_WR_RDMA_WRITE,
	.send_flags = IW_SEND_SIGNALED,
};
wr.wr.rdma.remote_addr = peer_addr;
wr.wr.rdma.rkey = peer_rkey;
struct iw_send_wr *bad;
int rc = iw_post_send(qp, &wr, &bad);
if (rc)
	fprintf(stderr, "iw_post_send: %s\n", strerror(rc));
""",
    "iw_alloc_mr": r"""
/* The initiator of one I/O: the peer may WRITE len octets into buf (zero-
 * based offsets) until it answers with a Send with Invalidate. */
struct iw_mr *mr = iw_alloc_mr(pd, 1);		/* once */

uint32_t stag = iw_inc_rkey(mr->rkey);		/* per I/O */
struct cmd c = {.stag = htonl(stag), .to = 0, .len = htonl(len)};
struct iw_sge cs = {.addr = (uintptr_t)&c, .length = sizeof(c)};
struct iw_send_wr send = {.wr_id = 2, .opcode = IW_WR_SEND,
			  .sg_list = &cs, .num_sge = 1,
			  .send_flags = IW_SEND_INLINE | IW_SEND_SIGNALED};
struct iw_send_wr reg = {.wr_id = 1, .opcode = IW_WR_REG_MR,
			 .next = &send};	/* Send starts after REG_MR ran */
reg.reg.mr = mr;
reg.reg.key = stag;
reg.reg.access = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE;
reg.reg.iova = 0;
reg.reg.length = len;
reg.reg.addr = buf;
struct iw_send_wr *bad;
if (iw_post_send(qp, &reg, &bad))
	return -1;

/* The answer arrives: was the grant revoked by the peer? */
if (wc.status == IW_WC_SUCCESS && wc.opcode == IW_WC_RECV &&
    !((wc.wc_flags & IW_WC_WITH_INV) && wc.invalidated_rkey == stag)) {
	struct iw_send_wr inv = {.wr_id = 3, .opcode = IW_WR_LOCAL_INV,
				 .send_flags = IW_SEND_SIGNALED};
	inv.invalidate_rkey = stag;
	if (iw_post_send(qp, &inv, &bad))	/* mr reusable after */
		return -1;			/* its completion */
}
""",
    "iw_post_recv": r"""
/* Post a receive before connecting: iWARP has no RNR retry. */
/* msg_mr covers msg and has IW_ACCESS_LOCAL_WRITE. */
struct iw_sge sge = {.addr = (uintptr_t)msg, .length = sizeof(msg),
		     .lkey = msg_mr->lkey};
struct iw_recv_wr wr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1};
struct iw_recv_wr *bad;
int rc = iw_post_recv(qp, &wr, &bad);
if (rc)
	fprintf(stderr, "iw_post_recv: %s\n", strerror(rc));
""",
    "iw_cm_connect": r"""
struct iw_cm_channel *cm = iw_cm_create_channel(ctx);
struct iw_cm_id *id;
struct iw_qp_init_attr qa = {
	.send_cq = cq, .recv_cq = cq, .qp_type = IW_QPT_RC,
	.cap = {.max_send_wr = 16, .max_recv_wr = 16},
};
struct sockaddr_in dst = {.sin_family = AF_INET,
			  .sin_port = htons(7174)};
inet_pton(AF_INET, "192.0.2.1", &dst.sin_addr);

if (iw_cm_create_id(cm, &id, NULL) || iw_cm_create_qp(id, pd, &qa))
	return -1;
/* post receives on id->qp here */
struct iw_conn_param p = {.responder_resources = 4,
			  .initiator_depth = 4};
int rc = iw_cm_connect(id, (struct sockaddr *)&dst, &p);
if (rc)
	return rc;

struct iw_cm_event *ev;
if (iw_cm_get_event(cm, &ev) == 0) {	/* blocks */
	bool up = ev->event == IW_CM_EVENT_ESTABLISHED;
	if (!up)
		fprintf(stderr, "%s: %s\n",
			iw_cm_event_str(ev->event),
			strerror(ev->status));
	iw_cm_ack_event(ev);
}
""",
    "iw_cm_listen": r"""
struct iw_cm_id *listener;
struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(7174),
			.sin_addr.s_addr = htonl(INADDR_ANY)};
if (iw_cm_create_id(cm, &listener, NULL) ||
    iw_cm_bind_addr(listener, (struct sockaddr *)&a) ||
    iw_cm_listen(listener, 0))
	return -1;
""",
    "iw_cm_accept": r"""
struct iw_cm_event *ev;
if (iw_cm_get_event(cm, &ev))
	return -1;
if (ev->event == IW_CM_EVENT_CONNECT_REQUEST) {
	struct iw_cm_id *id = ev->id;	/* ours to destroy */
	iw_cm_ack_event(ev);
	struct iw_conn_param p = {.responder_resources = 4,
				  .initiator_depth = 4};
	/* qa: as for iw_cm_connect; post receives before accepting */
	if (iw_cm_create_qp(id, pd, &qa) || iw_cm_accept(id, &p))
		iw_cm_destroy_id(id);
	/* IW_CM_EVENT_ESTABLISHED follows on cm */
} else {
	iw_cm_ack_event(ev);
}
""",
}


# ------------------------------------------------------------------ parsing


class Func:
    def __init__(self, name, proto, header, section, line):
        self.name = name
        self.proto = proto  # normalised: "type name(params);"
        self.header = header
        self.section = section
        self.line = line
        self.inline = proto.startswith("static inline")
        self.comment = None  # list of lines (prefix stripped)
        self.group = None  # key of the comment shared with others


def strip_comment(lines):
    """Lines of one /* ... */ block -> text lines without the decoration."""
    out = []
    for i, l in enumerate(lines):
        l = l.rstrip()
        if i == 0:
            l = re.sub(r"^\s*/\*+", "", l)
        if l.endswith("*/"):
            l = l[:-2].rstrip()
        if i > 0:
            m = re.match(r"^\s*\*( ?)(.*)$", l)
            if m:
                l = m.group(2)
            else:
                l = l.strip()
        elif l.startswith(" "):
            l = l[1:]
        out.append(l)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


DECL_RE = re.compile(r"^(?!#)(?!typedef)[A-Za-z_][^(;{}=]*?\b(iw_\w+)\(")


def parse_header(path, hname):
    lines = open(path, encoding="utf-8").read().split("\n")
    kind = [""] * len(lines)  # "c" comment, "d" declaration/body, "p" preprocessor
    comments = {}  # end line -> (start line, text lines)
    funcs = []
    section = hname[:-2]
    i = 0
    while i < len(lines):
        l = lines[i]
        s = l.strip()
        m = re.match(r"^/\* =+ (.*?) \*/$", s)
        if m:
            section = m.group(1).strip()
            kind[i] = "s"
            i += 1
            continue
        if s.startswith("/*") and (l.startswith("/*") or l.startswith(" ")
                                   or l.startswith("\t")) and DECL_RE.match(l) is None:
            j = i
            while "*/" not in lines[j]:
                j += 1
            # Only a comment that stands alone on its lines.
            if lines[j].rstrip().endswith("*/") and lines[i].lstrip().startswith("/*"):
                for k in range(i, j + 1):
                    kind[k] = "c"
                comments[j] = (i, strip_comment(lines[i:j + 1]))
            i = j + 1
            continue
        if s.startswith("#"):
            kind[i] = "p"
            i += 1
            continue
        m = DECL_RE.match(l)
        if m:
            name = m.group(1)
            j = i
            text = l
            inline = l.startswith("static inline")
            while True:
                code = re.sub(r"/\*.*?\*/", "", text)
                if inline and "{" in code:
                    break
                if not inline and ";" in code:
                    break
                j += 1
                text += "\n" + lines[j]
            code = re.sub(r"/\*.*?\*/", "", text)
            trailing = None
            tm = re.search(r"/\*(.*?)\*/\s*$", lines[j])
            if tm and not inline:
                trailing = [tm.group(1).strip()]
            if inline:
                proto = code[:code.index("{")]
                # Skip the body.
                depth = 0
                k = i
                while True:
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth == 0 and "}" in lines[k]:
                        break
                    k += 1
                j = k
            else:
                proto = code[:code.index(";")]
            proto = " ".join(proto.split()) + ";"
            proto = proto.replace("( ", "(").replace(" )", ")")
            f = Func(name, proto, hname, section, i + 1)
            f.trailing = trailing
            f.start = i
            f.end = j
            for k in range(i, j + 1):
                kind[k] = "d"
            funcs.append(f)
            i = j + 1
            continue
        i += 1

    # Attach comments: the nearest standalone comment above the declaration,
    # with only other declarations, inline bodies or #defines in between.
    for f in funcs:
        k = f.start - 1
        while k >= 0 and kind[k] in ("d", "p"):
            k -= 1
        if k >= 0 and kind[k] == "c" and k in comments:
            start, text = comments[k]
            f.comment = text
            f.group = (hname, start)
        elif f.trailing:
            f.comment = f.trailing
            f.group = (hname, f.start)
        else:
            MISSING.append("%s:%d: %s has no comment to document it" % (path, f.line, f.name))
            continue
    return funcs


# ------------------------------------------------------------ comment model


def split_sections(lines):
    """Structured comment -> (description lines, returns lines, errors)."""
    desc, ret, errs = [], [], []
    mode = "d"
    for l in lines:
        if l.startswith("Returns:"):
            mode = "r"
            rest = l[len("Returns:"):].strip()
            if rest:
                ret.append(rest)
            continue
        if l.startswith("Errors:"):
            mode = "e"
            continue
        if mode == "d":
            desc.append(l)
        elif mode == "r":
            if not l.strip():
                mode = "d"
                desc.append(l)
            else:
                ret.append(l.strip())
        else:
            m = re.match(r"^  (\S+)\s+(.*)$", l)
            if m:
                errs.append([m.group(1), [m.group(2).strip()]])
            elif l.startswith("   ") and errs:
                errs[-1][1].append(l.strip())
            elif not l.strip():
                mode = "d"
            else:
                raise SystemExit("bad Errors line: %r" % l)
    while desc and not desc[-1].strip():
        desc.pop()
    return desc, ret, errs


def first_sentence(text):
    t = " ".join(text.split())
    m = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", t)
    s = t[:m.start()] if m else t
    s = re.split(r", e\.g\.|: ", s)[0]
    return s


def wire_errors(text):
    """Free-text comment -> [(errno, reason)], in order of appearance."""
    t = " ".join(text.split())
    out = []
    seen = set()
    for m in re.finditer(r"-(E[A-Z]{2,})\b", t):
        e = m.group(1)
        if e in seen:
            continue
        seen.add(e)
        rest = t[m.end():]
        pm = re.match(r"\s*\(", rest)
        reason = None
        if pm:
            depth = 0
            for i, c in enumerate(rest):
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        reason = rest[pm.end():i].strip()
                        break
        if reason:
            reason = reason[0].upper() + reason[1:]
            if not reason.endswith("."):
                reason += "."
        else:
            reason = WIRE_ERRNO.get(e, "See DESCRIPTION.")
        out.append((e, reason))
    return out


def return_sentences(text):
    t = " ".join(text.split())
    sents = re.split(r"(?<=[.)])\s+(?=[A-Z(])", t)
    return [s for s in sents if re.match(r"^(Returns?|Return value)\b", s)]


# --------------------------------------------------------------- rendering


def esc(s):
    """Escape running text for troff."""
    s = s.replace("\\", "\\e")
    s = re.sub(r"(?<![A-Za-z0-9_])-(?=[A-Z0-9])", r"\\-", s)
    s = s.replace(" - ", " \\- ")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def esc_code(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def render_text(lines):
    """Comment description lines -> troff (paragraphs, bullets, tables)."""
    out = []
    para = []

    def flush_para():
        if para:
            out.extend(esc(x) for x in para)
            para.clear()

    started = False
    state = None  # None, "bullet", "dl"
    for l in lines:
        if not l.strip():
            flush_para()
            state = None
            if started:
                out.append(".PP")
            continue
        started = True
        bm = re.match(r"^( ?)- (.*)$", l)
        dm = re.match(r"^( +)(\S+)  +(\S.*)$", l)
        if bm:
            flush_para()
            out.append(".IP \\(bu 2")
            out.append(esc(bm.group(2)))
            state = "bullet"
            bullet_indent = len(bm.group(1)) + 2
            continue
        if state == "bullet" and l.startswith(" " * bullet_indent) and l.strip():
            out.append(esc(l.strip()))
            continue
        if not dm and state == "dl":
            dm = re.match(r"^( {%d})(\S+) +(\S.*)$" % (dl_col - 1), l)
        if dm:
            flush_para()
            out.append(".TP")
            out.append(".B %s" % esc(dm.group(2)))
            out.append(esc(dm.group(3)))
            state = "dl"
            dl_col = len(dm.group(1)) + 1
            continue
        if state == "dl" and l.startswith(" " * (dl_col + 1)):
            out.append(esc(l.strip()))
            continue
        if state in ("bullet", "dl"):
            state = None
            out.append(".PP")
        para.append(l.strip())
    flush_para()
    # Collapse doubled paragraph macros.
    res = []
    for x in out:
        if x == ".PP" and res and res[-1] == ".PP":
            continue
        res.append(x)
    while res and res[-1] == ".PP":
        res.pop()
    return res


def param_split(params):
    """'const struct x *a, int b' -> [(type_with_space, name, suffix)]."""
    if params.strip() in ("", "void"):
        return []
    out = []
    depth = 0
    cur = ""
    for c in params:
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += c in "([" and 1 or 0
        depth -= c in ")]" and 1 or 0
        cur += c
    if cur.strip():
        out.append(cur.strip())
    res = []
    for p in out:
        # A function pointer: "void (*cb)(int x)" -> ("void (*", "cb", ")(int x)").
        m = re.match(r"^(.*?\(\*)(\w+)(\)\(.*\))$", p) or re.match(
            r"^(.*?)(\w+)((?:\[[^\]]*\])*)$", p
        )
        typ, name, arr = m.group(1), m.group(2), m.group(3)
        if not typ.endswith("*") and not typ.endswith(" "):
            typ += " "
        res.append((typ, name, arr))
    return res


def synopsis_lines(proto):
    """A prototype as .BI lines, wrapped at 78 columns."""
    m = re.match(r"^(.*?)(\w+)\((.*)\);$", proto)
    head = m.group(1) + m.group(2) + "("
    params = param_split(m.group(3))
    if not params:
        return ['.B "%s"' % esc_code(head + "void);")]
    indent = " " * len(head)
    lines = []
    cur = [head]  # alternating bold, italic, bold, ...
    width = len(head)
    for i, (typ, name, arr) in enumerate(params):
        last = i == len(params) - 1
        sep = arr + (");" if last else ",")
        piece = len(typ) + len(name) + len(sep) + (0 if last else 1)
        if width + piece > 78 and width > len(indent):
            lines.append(cur)
            cur = [indent]
            width = len(indent)
        cur[-1] += typ
        cur.append(name)
        cur.append(sep + ("" if last else " "))
        width += piece
    lines.append(cur)
    res = []
    for parts in lines:
        parts = [p.rstrip() if k == len(parts) - 1 else p for k, p in enumerate(parts)]
        res.append(".BI " + " ".join('"%s"' % esc_code(p) for p in parts))
    return res


def th(name, sec):
    return '.TH %s %d "" "%s" "%s"' % (name.upper(), sec, SOURCE, MANUAL)


def render_page(f, funcs_by_name, groups, sections):
    desc, ret, errs = split_sections(f.comment)
    structured = any(l.startswith("Returns:") for l in f.comment)
    text = "\n".join(f.comment)
    summary = SUMMARY.get(f.name) or first_sentence(text)
    summary = summary[0].lower() + summary[1:] if summary[:2] != summary[:2].upper() else summary
    summary = summary.rstrip(".")
    members = groups[f.group]
    out = [
        "." + "\\\" Generated by scripts/gen_man.py from include/iwarp/%s; do not edit." % f.header,
        th(f.name, 3),
        ".nh",
        ".ad l",
        ".SH NAME",
        "%s \\- %s" % (f.name, esc(summary)),
        ".SH SYNOPSIS",
        ".nf",
        ".B #include <iwarp/iwarp.h>",
        ".PP",
    ]
    for g in members:
        out.extend(synopsis_lines(g.proto))
    out.append(".fi")
    out.append(".SH DESCRIPTION")
    body = desc if structured else f.comment
    out.extend(render_text(body))
    if f.inline:
        out.append(".PP")
        out.append(".BR %s ()" % f.name)
        out.append("is a static inline function defined in")
        out.append(".IR <iwarp/%s> ;" % f.header)
        out.append("it is not a symbol of the library.")
    if len(members) > 1:
        names = ["\\fB%s\\fP()" % g.name for g in members]
        out.append(".PP")
        out.append("This page describes %s and %s." % (", ".join(names[:-1]), names[-1]))
    out.append(".SH RETURN VALUE")
    rtype = f.proto.split("(")[0].rsplit(f.name, 1)[0].replace("static inline", "").strip()
    if structured and ret:
        ret = [ret[0][0].upper() + ret[0][1:]] + ret[1:]
        out.extend(esc(x) for x in ret)
    elif rtype == "void":
        out.append("None.")
    elif rtype == "const char *":
        out.append("A pointer to a static string, never NULL (see DESCRIPTION).")
    else:
        sents = return_sentences(text) if rtype == "int" else []
        if sents:
            out.extend(esc(x) for x in sents)
        else:
            out.append("See DESCRIPTION.")
        if rtype == "int" and wire_errors(text):
            out.append(".PP")
            out.append("Errors are returned as negative errno values, as everywhere in")
            out.append(".IR <iwarp/wire.h> .")
    out.append(".SH ERRORS")
    if structured:
        elist = errs
    elif rtype == "int":
        elist = [(e, [r]) for e, r in wire_errors(text)]
    else:
        elist = []
    if not elist:
        out.append("None.")
    for e, why in elist:
        out.append(".TP")
        if re.match(r"^E[A-Z0-9]+$", e):
            out.append(".B %s" % e)
        else:
            out.append(".I %s" % e.lower())
        out.extend(esc(x) for x in why)
    if LOOP_THREAD_RE.search(text):
        out.append(".SH NOTES")
        out.extend(esc(x) for x in LOOP_THREAD_NOTE.strip().split("\n"))
    ex = EXAMPLES.get(f.name)
    if ex:
        out.append(".SH EXAMPLE")
        out.append(".nf")
        out.append(".RS 4")
        for l in ex.strip("\n").split("\n"):
            l = l.replace("\t", "        ")
            out.append(esc_code(l) if l.strip() else "")
        out.append(".RE")
        out.append(".fi")
    # SEE ALSO: calls the comment names, the page's group, its section.
    see = []
    for m in re.finditer(r"\b(iw_\w+)\b", text):
        n = m.group(1)
        if n in funcs_by_name and n != f.name and n not in see:
            see.append(n)
    for g in members + sections[(f.header, f.section)]:
        if g.name != f.name and g.name not in see:
            see.append(g.name)
    see = (RELATED.get(f.name, []) + [n for n in see if n not in RELATED.get(f.name, [])])[:10]
    out.append(".SH SEE ALSO")
    refs = [".BR %s (3)" % n for n in see] + [".BR libiwarp (7)"]
    out.extend(r + "," for r in refs[:-1])
    out.append(refs[-1])
    # An empty input line would be a blank line in troff: keep it explicit.
    return "\n".join(x if x != "" else "\\&" for x in out) + "\n"


# ----------------------------------------------------------------- man7


def render_overview(funcs):
    by_header = {}
    for f in funcs:
        by_header.setdefault(f.header, []).append(f)
    o = []
    a = o.append
    a(".\\\" Generated by scripts/gen_man.py; do not edit.")
    a(th("libiwarp", 7))
    a(".nh")
    a(".ad l")
    a(".SH NAME")
    a("libiwarp \\- userspace iWARP (RDMAP/DDP/MPA over TCP) with a verbs-like API")
    a(".SH SYNOPSIS")
    a(".nf")
    a(".B #include <iwarp/iwarp.h>")
    a(".PP")
    a(".B cc ... $(pkg\\-config \\-\\-cflags \\-\\-libs libiwarp)")
    a(".fi")
    a(".SH DESCRIPTION")
    for l in """libiwarp is an iWARP stack in user space: RDMAP (RFC 5040) over DDP
(RFC 5041) over MPA (RFC 5044, with RFC 6581 enhanced connection setup)
over ordinary nonblocking TCP sockets. RFC 7306 atomics and immediate data
are an extension used only on QPs created with IW_QP_CREATE_RFC7306. It
puts the same octets on the wire as the Linux kernel's siw and hardware
iWARP adapters (Chelsio, Intel), so either side of a connection may be
one of them.""".split("\n"):
        a(esc(l))
    a(".PP")
    for l in """The API has the shapes of rdma-core: the verbs of libibverbs
(protection domains, memory regions, completion queues and channels, queue
pairs, shared receive queues) and the connection manager of librdmacm,
with an iw_ prefix instead of ibv_ or rdma_. No ibv_ or rdma_ symbol is
defined, so the real libraries can be linked into the same program.""".split("\n"):
        a(esc(l))
    a(".SS Headers")
    a(".TP")
    a(".I <iwarp/iwarp.h>")
    a("The umbrella header: includes <iwarp/verbs.h>, <iwarp/cm.h> and")
    a("<iwarp/wire.h>.")
    a(".TP")
    a(".I <iwarp/verbs.h>")
    a("Contexts, asynchronous events, PDs and MRs, CQs and completion channels,")
    a("QPs, SRQs, posting work requests and polling completions.")
    a(".TP")
    a(".I <iwarp/cm.h>")
    a("The connection manager: event channels, ids that listen or connect,")
    a("accept and reject with private data, MPA negotiation options.")
    a(".TP")
    a(".I <iwarp/wire.h>")
    a("The wire codecs the engine is built from, public for tools: CRC32c, MPA")
    a("frames, the FPDU encoder and stream decoder, DDP and RDMAP headers,")
    a("TERMINATE triples and parse failure reasons.")
    a(".SS Layering")
    for l in """The protocol lives in a sans-I/O core: state machines over octets and
iovecs that never touch a socket. The verbs and the connection manager sit
on top of it; the glue between the core and TCP runs on a libevent loop.
Payload is never copied on the way out, inline data aside (FPDUs are
gathered from the registered memory into one sendmsg) and, for large tagged and untagged
segments, received straight into the target buffer; only headers go
through a bounce buffer. Every FPDU is at most MULPDU octets, computed
from the connection's live MSS.""".split("\n"):
        a(esc(l))
    a(".SS Event loop")
    for l in """A context runs on a libevent loop. Give iw_context_new the
application's struct event_base (attr->base) to embed libiwarp in the
application's loop: libiwarp adds its events to that base and the
application dispatches it; the base needs no libevent thread support,
since libiwarp touches it only on the loop thread. With attr->base NULL
(convenience mode) the context creates a base and runs it on a thread of
its own until iw_context_free. Receives, completions and connection setup
only progress while the loop runs.""".split("\n"):
        a(esc(l))
    a(".SS Threads")
    for l in """Posting (iw_post_send, iw_post_recv, iw_post_srq_recv), polling and
arming CQs, taking and acknowledging events, and registering memory may be
done from any thread. Posting writes to the socket from the calling thread
when the socket can take the data, and never blocks. No libiwarp lock is
held while application code runs: completions and events are delivered
through queues whose file descriptors the application waits on, never by
callback. Every connection manager call that changes an id runs on the
loop thread: made on the loop thread it runs inline; made on another
thread it is queued to the loop and waited for, so with an application
base the loop must be running whenever another thread makes such a call.
Creation and destruction of an object must not race with its use.""".split("\n"):
        a(esc(l))
    a(".SS Errors")
    for l in """Verbs and connection manager calls that return a pointer return NULL and
set errno; calls that return int return 0 or a positive errno value, as in
libibverbs. iw_poll_cq returns a count or a negative errno. Every free and
destroy call accepts NULL. A destroy refuses (EBUSY) while the object
still has children or unacknowledged events; iw_context_free only checks
for CM ids. The outcome of a connection
attempt is a CM event (ESTABLISHED, REJECTED, UNREACHABLE, CONNECT_ERROR)
with a positive errno in its status.""".split("\n"):
        a(esc(l))
    a(".PP")
    for l in """The wire.h functions return 0 (or a length) or a negative errno: -EAGAIN
only ever means that more input is needed, -EPROTO is a peer's protocol
violation (its reason an enum iw_wire_err, which maps to the exact
TERMINATE triple of RFC 5040/5041/5044), and -EBADMSG an MPA CRC error.
A peer's violation on a live connection makes the QP send that TERMINATE,
raise an asynchronous event and flush every outstanding work request with
IW_WC_WR_FLUSH_ERR, in order.""".split("\n"):
        a(esc(l))
    a(".SS CRC32c")
    for l in """The MPA CRC is computed with ISA-L (crc32_iscsi), in one pass over the
octets as they go out or come in. It goes on the wire least-significant
octet first. iw_crc32c, iw_crc32c_update and iw_crc32c_iov expose it.""".split("\n"):
        a(esc(l))
    a(".SS Interoperability")
    for l in """The default MPA options (iw_mpa_opts_default) follow what siw, Chelsio
and Intel adapters do: revision 2 with the RFC 6581 block and peer-to-peer
mode, WRITE and READ RTRs offered, CRC requested, markers not requested but
honoured, IRD and ORD negotiated down. struct iw_mpa_opts can make a
connection behave like any of those peers.""".split("\n"):
        a(esc(l))
    a(".SH ENVIRONMENT")
    a(".TP")
    a(".B IWARP_PCAP")
    a("A pcap trace path for contexts whose attributes do not set one: every")
    a("connection's octets, both ways, as TCP that Wireshark decodes; \"%p\" becomes")
    a("the process ID. See")
    a(".BR iw_context_new (3).")
    a(".TP")
    a(".B IWARP_PCAP_MAX")
    a("The size cap of such a trace, in octets, with an optional K, M, G or T")
    a("suffix (powers of 1024); default 1G. Tracing stops at the cap.")
    a(".SH EXAMPLES")
    for l in """examples/example_server.c and examples/example_client.c in the source
tree are a complete program pair: the client connects, both advertise a
buffer with a Send, the client RDMA WRITEs its buffer into the server's,
READs it back and compares, and both disconnect. examples/blk_target.c
and examples/blk_initiator.c are a small block target and initiator: the
target embeds the context in its own event_base, serves every connection
from one SRQ and one CQ, and registers each RDMA READ sink for one I/O
only; the initiator grants each I/O's buffer with fast registration and
checks that the response invalidated it. Each call of the classic flow has
a short example on its own page (iw_context_new, iw_reg_mr, iw_alloc_mr,
iw_create_cq, iw_poll_cq, iw_post_send, iw_post_recv, iw_cm_listen,
iw_cm_connect, iw_cm_accept).""".split("\n"):
        a(esc(l))
    a(".SH FUNCTIONS")
    for h in HEADERS:
        a(".SS <iwarp/%s>" % h)
        fl = by_header.get(h, [])
        for k, f in enumerate(fl):
            a(".BR %s (3)%s" % (f.name, "," if k < len(fl) - 1 else ""))
    a(".SH STANDARDS")
    a("RFC 5040 (RDMAP), RFC 5041 (DDP), RFC 5044 (MPA), RFC 6581 (enhanced MPA")
    a("connection setup), RFC 7306 (atomics and immediate data), RFC 6580 (IANA")
    a("registries for the TERMINATE codes).")
    a(".SH SEE ALSO")
    main = ["iw_context_new", "iw_alloc_pd", "iw_reg_mr", "iw_create_cq", "iw_poll_cq",
            "iw_create_qp", "iw_post_send", "iw_post_recv", "iw_cm_create_channel",
            "iw_cm_listen", "iw_cm_connect", "iw_cm_accept"]
    for k, n in enumerate(main):
        a(".BR %s (3)%s" % (n, "," if k < len(main) - 1 else ""))
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------- main


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--srcdir", default=os.path.dirname(here))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or os.path.join(args.srcdir, "man")
    inc = os.path.join(args.srcdir, "include", "iwarp")

    funcs = []
    for h in HEADERS:
        funcs.extend(parse_header(os.path.join(inc, h), h))
    # Every header with column-0 functions must be one we know.
    for h in sorted(os.listdir(inc)):
        if h.endswith(".h") and h not in HEADERS:
            if parse_header(os.path.join(inc, h), h):
                sys.exit("gen_man.py: add %s to HEADERS" % h)
    if MISSING:
        sys.exit("gen_man.py: undocumented:\n  " + "\n  ".join(MISSING))
    names = [f.name for f in funcs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit("gen_man.py: declared twice: %s" % ", ".join(sorted(dup)))
    by_name = {f.name: f for f in funcs}
    groups, sections = {}, {}
    for f in funcs:
        groups.setdefault(f.group, []).append(f)
        sections.setdefault((f.header, f.section), []).append(f)

    os.makedirs(os.path.join(out, "man3"), exist_ok=True)
    os.makedirs(os.path.join(out, "man7"), exist_ok=True)
    for f in funcs:
        page = render_page(f, by_name, groups, sections)
        with open(os.path.join(out, "man3", f.name + ".3"), "w", encoding="utf-8") as fh:
            fh.write(page)
    with open(os.path.join(out, "man7", "libiwarp.7"), "w", encoding="utf-8") as fh:
        fh.write(render_overview(funcs))
    with open(os.path.join(out, "Makefile.inc"), "w", encoding="utf-8") as fh:
        fh.write("# Generated by scripts/gen_man.py; do not edit.\n")
        fh.write("dist_man3_MANS =")
        for n in sorted(names):
            fh.write(" \\\n\tman/man3/%s.3" % n)
        fh.write("\ndist_man7_MANS = man/man7/libiwarp.7\n")
    print("gen_man.py: %d pages in %s" % (len(funcs) + 1, out))


if __name__ == "__main__":
    main()
