#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the interop rig's command channel.

usage: guestcmd.py RUNDIR NCHAN [-t SECONDS] CMD...

The words of CMD are joined with spaces and run by /bin/sh (dash) in the
guest, in /root, like ssh does. The guest's stdout and stderr are written
to ours and the exit status is the command's; 255 means the command could
not be run or its answer did not come back (the guest is gone or hung).

Each of the NCHAN virtio-serial ports (unix sockets RUNDIR/cmdN.sock on the
host) serves one command at a time; an flock on RUNDIR/cmdN.lock claims
one. The protocol is the one guest/cmdloop documents.

With -t, the guest SIGKILLs the command's process group after SECONDS
(exit status 137). Every wait here is bounded: without -t the answer must
come within IWI_RIG_CMD_WAIT seconds (default 3600).
"""
import base64
import fcntl
import os
import socket
import sys
import time


def fail(msg):
    sys.stderr.write('guest.sh: %s\n' % msg)
    sys.exit(255)


def busy_in_guest(run, i):
    """True while the guest may still run a command a killed client sent on
    channel i: a new request there would wait behind it."""
    try:
        with open(os.path.join(run, 'cmd%d.inflight' % i)) as f:
            return time.time() < float(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return False


def claim_channel(run, nchan, deadline):
    """Lock a free channel, preferring one the guest is not still busy on;
    returns (lock file, channel number)."""
    while True:
        for pass_ in (0, 1):
            for i in range(nchan):
                if pass_ == 0 and busy_in_guest(run, i):
                    continue
                f = open(os.path.join(run, 'cmd%d.lock' % i), 'w')
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return f, i
                except BlockingIOError:
                    f.close()
        if time.monotonic() > deadline:
            fail('all %d command channels stayed busy' % nchan)
        time.sleep(0.05)


def main():
    if len(sys.argv) < 3:
        fail('usage: guestcmd.py RUNDIR NCHAN [-t SECONDS] CMD...')
    run, nchan = sys.argv[1], int(sys.argv[2])
    args = sys.argv[3:]
    timeout = 0
    while args and args[0].startswith('-'):
        if args[0] == '--':
            args = args[1:]
            break
        if args[0] == '-t' and len(args) > 1 and args[1].isdigit():
            timeout = int(args[1])
            args = args[2:]
        else:
            fail('usage: guest.sh [-t SECONDS] CMD...')
    if not args:
        fail('usage: guest.sh [-t SECONDS] CMD...')
    script = ' '.join(args)

    start = time.monotonic()
    lock, chan = claim_channel(run, nchan, start + 600)
    # Our own limit: the guest's timeout plus time for it to answer.
    wait = timeout + 30 if timeout else int(os.environ.get('IWI_RIG_CMD_WAIT', '3600'))

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(10)
        s.connect(os.path.join(run, 'cmd%d.sock' % chan))
    except OSError as e:
        fail('cannot reach the guest (%s); is the rig started (start.sh)?' % e)
    rid = '%d.%d' % (os.getpid(), time.time_ns())
    # Until the answer is in, the channel is busy in the guest; if we are
    # killed this marker tells the next client so (until the guest's own
    # timeout, or our wait, has surely passed).
    inflight = os.path.join(run, 'cmd%d.inflight' % chan)
    with open(inflight, 'w') as f:
        f.write('%s %f\n' % (rid, time.time() + (timeout + 5 if timeout else wait)))
    s.sendall(('%s %d %s\n' % (rid, timeout,
               base64.b64encode(script.encode()).decode())).encode())

    deadline = time.monotonic() + wait
    out, err, part, rc = [], [], None, None
    buf = b''
    while rc is None:
        left = deadline - time.monotonic()
        if left <= 0:
            fail('no answer from the guest within %d s' % wait)
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        except OSError as e:
            fail('command channel error: %s' % e)
        if not data:
            fail('the guest closed the command channel (QEMU gone?)')
        buf += data
        lines = buf.split(b'\n')
        buf = lines.pop()
        for raw in lines:
            line = raw.strip()
            if not line:
                continue
            if line.startswith(b'@@IWI '):
                w = line.decode(errors='replace').split()
                if len(w) < 3 or w[2] != rid:
                    part = None  # the late answer of an abandoned request
                elif w[1] == 'OUT':
                    part = out
                elif w[1] == 'ERR':
                    part = err
                elif w[1] == 'END' and len(w) >= 4:
                    rc = int(w[3])
                    break
                elif w[1] == 'BAD':
                    fail('the guest could not decode the request')
                continue
            if part is not None:
                part.append(line)
    s.close()
    os.unlink(inflight)
    lock.close()
    sys.stdout.buffer.write(base64.b64decode(b''.join(out)))
    sys.stdout.flush()
    sys.stderr.buffer.write(base64.b64decode(b''.join(err)))
    sys.stderr.flush()
    sys.exit(rc)


if __name__ == '__main__':
    main()
