/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NVMe over Fabrics, RDMA transport binding: the octets on the wire, sans
 * I/O. Shared by iwarp-nvmet (the target) and iwarp-nvmf-perf (the host).
 *
 * Everything NVMe is little-endian and read here by shifts through a
 * bounded cursor (nvmf_le.h); nothing is overlaid on a struct. Parsers treat
 * every octet as hostile: a parse either fills its output completely or
 * returns the NVMe status (or binding reject code) that names the problem.
 *
 * Sources of the facts: NVM Express Base 2.0 (command and completion
 * layout, status codes, Identify, log pages, properties), NVMe over Fabrics
 * 1.1 (Connect, Property Get/Set, discovery log), NVMe RDMA Transport 1.0
 * (CM private data, keyed SGLs, Send with Invalidate), and what Linux's
 * nvme-rdma host and nvmet-rdma target send and expect.
 */
#ifndef NVMF_H
#define NVMF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ sizes */
#define NVMF_CMD_SIZE 64        /* submission queue entry (command capsule) */
#define NVMF_CQE_SIZE 16        /* completion queue entry (response capsule) */
#define NVMF_CM_PD_SIZE 32      /* CM request and accept private data */
#define NVMF_CM_REJ_SIZE 4      /* CM reject private data */
#define NVMF_CONNECT_DATA_SIZE 1024
#define NVMF_IDENTIFY_SIZE 4096
#define NVMF_NQN_SIZE 256       /* NQN fields, NUL padded; at most 223 octets used */
#define NVMF_NQN_MAX 223
#define NVMF_DISC_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define NVMF_AQ_DEPTH 32        /* admin queue entries a host asks for */
#define NVMF_MAX_KEYED_LEN 0xFFFFFFu /* 24-bit keyed SGL length */

/* ------------------------------------------------------------ RDMA CM */
enum nvmf_cm_status {
	NVMF_CM_INVALID_LEN = 0x01,
	NVMF_CM_INVALID_RECFMT = 0x02,
	NVMF_CM_INVALID_QID = 0x03,
	NVMF_CM_INVALID_HSQSIZE = 0x04,
	NVMF_CM_INVALID_HRQSIZE = 0x05,
	NVMF_CM_NO_RSC = 0x06,
	NVMF_CM_INVALID_IRD = 0x07,
	NVMF_CM_INVALID_ORD = 0x08,
};

struct nvmf_cm_req {
	uint16_t recfmt;  /* 0: format 1.0 */
	uint16_t qid;     /* 0: admin queue */
	uint16_t hrqsize; /* host receive queue size (responses it can take) */
	uint16_t hsqsize; /* host send queue size, 0's based (Linux: sqsize) */
};
struct nvmf_cm_rep {
	uint16_t recfmt;
	uint16_t crqsize; /* controller receive queue size */
};

void nvmf_cm_req_put(uint8_t out[NVMF_CM_PD_SIZE], const struct nvmf_cm_req *r);
/* Parse the host's private data: 0, or the NVMF_CM_* code to reject with
 * (length short, record format unknown). */
int nvmf_cm_req_parse(struct nvmf_cm_req *r, const void *pd, size_t len);
void nvmf_cm_rep_put(uint8_t out[NVMF_CM_PD_SIZE], const struct nvmf_cm_rep *r);
int nvmf_cm_rep_parse(struct nvmf_cm_rep *r, const void *pd, size_t len);
void nvmf_cm_rej_put(uint8_t out[NVMF_CM_REJ_SIZE], uint16_t status);
/* Reject status from the private data (0 if it is not a binding reject). */
uint16_t nvmf_cm_rej_parse(const void *pd, size_t len);
const char *nvmf_cm_status_str(int status);

/* ------------------------------------------------------------ status */
/* As Linux: (SCT << 8) | SC, with DNR as bit 14. On the wire the field is
 * this value shifted left by one (bit 0 is the phase tag, DNR is bit 15). */
enum {
	NVME_SC_SUCCESS = 0x00,
	NVME_SC_INVALID_OPCODE = 0x01,
	NVME_SC_INVALID_FIELD = 0x02,
	NVME_SC_CMDID_CONFLICT = 0x03,
	NVME_SC_DATA_XFER_ERROR = 0x04,
	NVME_SC_INTERNAL = 0x06,
	NVME_SC_ABORT_REQ = 0x07,
	NVME_SC_ABORT_QUEUE = 0x08,
	NVME_SC_INVALID_NS = 0x0b,
	NVME_SC_CMD_SEQ_ERROR = 0x0c,
	NVME_SC_SGL_INVALID_LAST = 0x0d,
	NVME_SC_SGL_INVALID_COUNT = 0x0e,
	NVME_SC_SGL_INVALID_DATA = 0x0f,    /* Data SGL Length Invalid */
	NVME_SC_SGL_INVALID_METADATA = 0x10,
	NVME_SC_SGL_INVALID_TYPE = 0x11,
	NVME_SC_SGL_INVALID_OFFSET = 0x16,
	NVME_SC_KA_TIMEOUT_INVALID = 0x1a,
	NVME_SC_LBA_RANGE = 0x80,
	NVME_SC_CAP_EXCEEDED = 0x81,
	NVME_SC_NS_NOT_READY = 0x82,
	NVME_SC_QID_INVALID = 0x101,
	NVME_SC_ASYNC_LIMIT = 0x105,
	NVME_SC_INVALID_LOG_PAGE = 0x109,
	NVME_SC_FEATURE_NOT_SAVEABLE = 0x10d,
	NVME_SC_CONNECT_FORMAT = 0x180,
	NVME_SC_CONNECT_CTRL_BUSY = 0x181,
	NVME_SC_CONNECT_INVALID_PARAM = 0x182,
	NVME_SC_CONNECT_RESTART_DISC = 0x183,
	NVME_SC_CONNECT_INVALID_HOST = 0x184,
	NVME_SC_WRITE_FAULT = 0x280,
	NVME_SC_READ_ERROR = 0x281,
	NVME_SC_DNR = 0x4000,
	NVME_SC_MASK = 0x7ff,
};
const char *nvmf_status_str(uint16_t status);

/* ------------------------------------------------------------ opcodes */
enum {
	NVME_ADM_GET_LOG_PAGE = 0x02,
	NVME_ADM_IDENTIFY = 0x06,
	NVME_ADM_ABORT = 0x08,
	NVME_ADM_SET_FEATURES = 0x09,
	NVME_ADM_GET_FEATURES = 0x0a,
	NVME_ADM_ASYNC_EVENT = 0x0c,
	NVME_ADM_KEEP_ALIVE = 0x18,
	NVME_FABRICS = 0x7f,
	NVME_IO_FLUSH = 0x00,
	NVME_IO_WRITE = 0x01,
	NVME_IO_READ = 0x02,
	NVME_IO_WRITE_ZEROES = 0x08,
	NVME_IO_DSM = 0x09,
};
enum {
	NVMF_FCTYPE_PROP_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROP_GET = 0x04,
};
/* Data direction of an opcode (or of a fabrics command type): bits 1:0. */
enum nvmf_dir { NVMF_DIR_NONE = 0, NVMF_DIR_H2C = 1, NVMF_DIR_C2H = 2, NVMF_DIR_BIDI = 3 };

/* ------------------------------------------------------------ SGL */
enum {
	NVMF_SGL_DATA = 0x0,     /* data block; subtype OFFSET: in-capsule */
	NVMF_SGL_KEYED = 0x4,    /* keyed data block (RDMA) */
	NVMF_SGL_SUB_ADDRESS = 0x0,
	NVMF_SGL_SUB_OFFSET = 0x1,
	NVMF_SGL_SUB_INVALIDATE = 0xf,
};
enum nvmf_sgl_kind { NVMF_SGL_KIND_KEYED, NVMF_SGL_KIND_INCAPSULE };
struct nvmf_sgl {
	enum nvmf_sgl_kind kind;
	uint64_t addr;     /* keyed: remote address; in-capsule: offset */
	uint32_t length;
	uint32_t key;      /* keyed only */
	bool invalidate;   /* keyed, subtype 0xF: answer with Send with Invalidate */
};
/* Decode the 16-octet SGL descriptor: 0 or an NVMe status. */
uint16_t nvmf_sgl_parse(struct nvmf_sgl *s, const uint8_t d[16]);
void nvmf_sgl_put(uint8_t d[16], const struct nvmf_sgl *s);

/* ------------------------------------------------------------ command */
#define NVME_CMD_FUSE_MASK 0x03
#define NVME_CMD_PSDT_MASK 0xc0
#define NVME_CMD_PSDT_SGL_MPTR 0x40 /* SGLs, metadata pointer contiguous: what fabrics uses */

struct nvmf_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint8_t fctype;     /* octet 4 of a fabrics command (overlaps nsid) */
	uint8_t sgl_raw[16];
	uint32_t cdw[16];   /* cdw[10]..cdw[15] as on the wire; others 0 */
};
/* Decode a received capsule. Only the length is checked here (at least 64
 * octets): fields are checked against what the command means by its
 * handler. Returns 0 or -EBADMSG. */
int nvmf_cmd_parse(struct nvmf_cmd *c, const void *buf, size_t len);
void nvmf_cmd_put(uint8_t out[NVMF_CMD_SIZE], const struct nvmf_cmd *c);
enum nvmf_dir nvmf_cmd_dir(const struct nvmf_cmd *c);

/* Fabrics commands. */
struct nvmf_connect {
	uint16_t recfmt, qid, sqsize; /* sqsize 0's based */
	uint8_t cattr;
	uint32_t kato;                /* ms */
};
void nvmf_connect_get(struct nvmf_connect *k, const struct nvmf_cmd *c);
void nvmf_connect_set(struct nvmf_cmd *c, const struct nvmf_connect *k);
/* Byte offsets the IPO of a Connect error points at. */
enum {
	NVMF_CONNECT_OFF_QID = 42,
	NVMF_CONNECT_OFF_SQSIZE = 44,
	NVMF_CONNECT_OFF_KATO = 48,
	NVMF_CD_OFF_CNTLID = 16,
	NVMF_CD_OFF_SUBNQN = 256,
	NVMF_CD_OFF_HOSTNQN = 512,
};
/* Connect's result DW0 on an Invalid Parameter: the offset of the field at
 * fault (IPO), in the data (IATTR 1) or in the command (0). */
static inline uint32_t nvmf_connect_ipo(bool in_data, uint16_t off)
{
	return ((uint32_t)in_data << 16) | off;
}

struct nvmf_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;
	char subnqn[NVMF_NQN_SIZE];  /* NUL terminated after parse */
	char hostnqn[NVMF_NQN_SIZE];
};
/* Decode the 1024-octet Connect data: 0, or an NVMe status with *ipo_out
 * (result DW0) set when an NQN is not a NUL-terminated string. */
uint16_t nvmf_connect_data_parse(struct nvmf_connect_data *d, const void *buf, size_t len,
				 uint32_t *ipo_out);
void nvmf_connect_data_put(uint8_t out[NVMF_CONNECT_DATA_SIZE], const struct nvmf_connect_data *d);

struct nvmf_prop {
	uint8_t size8;    /* attrib bits 2:0: 0 = 4 octets, 1 = 8 octets */
	uint32_t offset;
	uint64_t value;   /* Property Set */
};
void nvmf_prop_get(struct nvmf_prop *p, const struct nvmf_cmd *c);
void nvmf_prop_set(struct nvmf_cmd *c, const struct nvmf_prop *p);

/* Properties (offsets) and fields. */
enum {
	NVME_REG_CAP = 0x00,
	NVME_REG_VS = 0x08,
	NVME_REG_CC = 0x14,
	NVME_REG_CSTS = 0x1c,
	NVME_CC_EN = 1u << 0,
	NVME_CC_SHN_SHIFT = 14,
	NVME_CC_SHN_MASK = 3u << 14,
	NVME_CSTS_RDY = 1u << 0,
	NVME_CSTS_CFS = 1u << 1,
	NVME_CSTS_SHST_SHIFT = 2,
	NVME_CSTS_SHST_MASK = 3u << 2,
	NVME_SHST_OCCUR = 1,
	NVME_SHST_CMPLT = 2,
	NVME_VS_1_3 = 0x00010300,
};
/* CC fields a controller must check when EN goes to 1. */
static inline unsigned nvme_cc_iosqes(uint32_t cc) { return (cc >> 16) & 0xf; }
static inline unsigned nvme_cc_iocqes(uint32_t cc) { return (cc >> 20) & 0xf; }
static inline unsigned nvme_cc_mps(uint32_t cc) { return (cc >> 7) & 0xf; }
static inline unsigned nvme_cc_css(uint32_t cc) { return (cc >> 4) & 0x7; }
static inline unsigned nvme_cc_ams(uint32_t cc) { return (cc >> 11) & 0x7; }
/* CAP: MQES (0's based), CQR, timeout in 500 ms units, NVM command set. */
uint64_t nvme_cap_make(uint16_t mqes0, uint8_t to_500ms);

/* ------------------------------------------------------------ completion */
struct nvmf_cqe {
	uint64_t result;   /* DW0 (and DW1) */
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t cid;
	uint16_t status;   /* (SCT << 8) | SC | DNR, as NVME_SC_* (no phase) */
};
void nvmf_cqe_put(uint8_t out[NVMF_CQE_SIZE], const struct nvmf_cqe *e);
int nvmf_cqe_parse(struct nvmf_cqe *e, const void *buf, size_t len);

/* ------------------------------------------------------------ I/O commands */
struct nvmf_rw {
	uint64_t slba;
	uint32_t nlb;      /* 1's based here (the wire's field + 1) */
	bool fua;
	bool deac;         /* Write Zeroes: deallocate */
};
void nvmf_rw_get(struct nvmf_rw *rw, const struct nvmf_cmd *c);
void nvmf_rw_set(struct nvmf_cmd *c, const struct nvmf_rw *rw);
struct nvmf_dsm_range {
	uint32_t cattr;
	uint32_t nlb;      /* length in blocks (not 0's based) */
	uint64_t slba;
};
#define NVMF_DSM_RANGE_SIZE 16
#define NVME_DSM_AD (1u << 2)
void nvmf_dsm_range_get(struct nvmf_dsm_range *r, const uint8_t *p);
void nvmf_dsm_range_put(uint8_t *p, const struct nvmf_dsm_range *r);

/* ------------------------------------------------------------ identify */
enum { NVME_ID_CNS_NS = 0x00, NVME_ID_CNS_CTRL = 0x01, NVME_ID_CNS_NS_LIST = 0x02,
       NVME_ID_CNS_NS_DESC = 0x03 };
enum { NVME_CTRL_IO = 1, NVME_CTRL_DISC = 2 };
struct nvmf_id_ctrl {
	uint16_t cntlid;
	uint8_t cntrltype;   /* NVME_CTRL_IO or NVME_CTRL_DISC */
	const char *sn, *mn, *fr;
	const char *subnqn;
	uint8_t mdts;        /* 2^mdts pages of 4 KiB */
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t kas;        /* keep alive granularity, 100 ms units */
	uint32_t ioccsz;     /* 16-octet units: command + in-capsule data */
	bool vwc;
	bool dsm, write_zeroes;
	uint8_t aerl;        /* 0's based */
};
void nvmf_id_ctrl_put(uint8_t out[NVMF_IDENTIFY_SIZE], const struct nvmf_id_ctrl *c);
struct nvmf_id_ns {
	uint64_t nsze;       /* blocks */
	uint8_t lbads;       /* log2 of the block size */
	uint8_t dlfeat;      /* deallocate behaviour */
	uint8_t nguid[16];
};
void nvmf_id_ns_put(uint8_t out[NVMF_IDENTIFY_SIZE], const struct nvmf_id_ns *n);
/* Field offsets the host reads back (nvmf_id_* getters in the host). */
enum {
	NVME_IDC_CNTLID = 78, NVME_IDC_VER = 80, NVME_IDC_CNTRLTYPE = 111, NVME_IDC_MDTS = 77,
	NVME_IDC_KAS = 320, NVME_IDC_MAXCMD = 514, NVME_IDC_NN = 516, NVME_IDC_ONCS = 520,
	NVME_IDC_SGLS = 536, NVME_IDC_SUBNQN = 768, NVME_IDC_IOCCSZ = 1792,
	NVME_IDC_IORCSZ = 1796, NVME_IDC_MSDBD = 1803,
	NVME_IDN_NSZE = 0, NVME_IDN_FLBAS = 26, NVME_IDN_LBAF0 = 128,
};
/* Namespace ID descriptor list: NGUID, UUID (from the NGUID) and CSI. */
void nvmf_id_ns_desc_put(uint8_t out[NVMF_IDENTIFY_SIZE], const uint8_t nguid[16]);

/* ------------------------------------------------------------ log pages */
enum { NVME_LOG_ERROR = 0x01, NVME_LOG_SMART = 0x02, NVME_LOG_FW_SLOT = 0x03,
       NVME_LOG_CHANGED_NS = 0x04, NVME_LOG_DISC = 0x70 };
struct nvmf_get_log {
	uint8_t lid;
	bool rae;
	uint64_t numd;      /* dwords, 1's based (up to 2^32) */
	uint64_t offset;    /* LPO, octets */
};
void nvmf_get_log_get(struct nvmf_get_log *g, const struct nvmf_cmd *c);
void nvmf_get_log_set(struct nvmf_cmd *c, const struct nvmf_get_log *g);
#define NVMF_SMART_SIZE 512
#define NVMF_ERRLOG_ENTRY 64
struct nvmf_smart {
	uint64_t data_units_read, data_units_written; /* 1000s of 512-octet units */
	uint64_t host_reads, host_writes;
	uint64_t power_on_hours;
};
void nvmf_smart_put(uint8_t out[NVMF_SMART_SIZE], const struct nvmf_smart *s);

#define NVMF_DISC_HDR 1024
#define NVMF_DISC_ENTRY 1024
enum { NVMF_TRTYPE_RDMA = 1, NVMF_TRTYPE_TCP = 3, NVMF_ADRFAM_IPV4 = 1, NVMF_ADRFAM_IPV6 = 2,
       NVMF_SUBTYPE_DISC = 1, NVMF_SUBTYPE_NVME = 2, NVMF_RDMA_PRTYPE_IWARP = 5,
       NVMF_RDMA_QPTYPE_CONNECTED = 1, NVMF_RDMA_CMS_RDMA_CM = 1 };
struct nvmf_disc_entry {
	uint8_t trtype, adrfam, subtype;
	uint16_t portid, cntlid, asqsz;
	char trsvcid[33];
	char subnqn[NVMF_NQN_SIZE];
	char traddr[NVMF_NQN_SIZE + 1];
};
void nvmf_disc_hdr_put(uint8_t out[NVMF_DISC_HDR], uint64_t genctr, uint64_t numrec);
void nvmf_disc_entry_put(uint8_t out[NVMF_DISC_ENTRY], const struct nvmf_disc_entry *e);
int nvmf_disc_entry_parse(struct nvmf_disc_entry *e, const uint8_t *p, size_t len);

/* ------------------------------------------------------------ features */
enum { NVME_FEAT_NUM_QUEUES = 0x07, NVME_FEAT_ASYNC_EVENT = 0x0b, NVME_FEAT_KATO = 0x0f,
       NVME_FEAT_VOLATILE_WC = 0x06 };

#endif /* NVMF_H */
