"""The safe unpickler's fast loop: the common opcodes of torch (protocol 2) and DCP (protocol 4) pickles,
read from the bytes with an index, inline in one loop.

It is ``pickle._Unpickler.load`` with every read replaced by a bounds-checked slice and every common
opcode's body written out in place (no ``read`` call, no method call per opcode). It handles only the
plain case of each opcode: whenever an argument would cross the end of the input or of a frame, a memo
index is missing, or the opcode is one it does not write out, it hands the rest of the pickle to the
unpickler's own loop at that opcode's start, before anything was changed, so every error, message,
partial value and end offset comes from the same code as before. Inline bodies repeat pickle's own
expressions (``stack[-1]``, ``stack.pop()``, ``metastack.pop()``) so an error raised inside one (an
empty stack, an unhashable key, a stand-in refusing its arguments) is the same error; the stream is
left where pickle's reads would have left it, and the opcode count is kept in the same budget.

Runs of number opcodes (an RNG state's 625 ints, float lists) are decoded in one call of the C unpickler
(``_number_run``), each opcode still counted; the end of input/frame and the opcode budget are checked
exactly only near a position where either could be reached (``soft``), not at every opcode.
"""

from __future__ import annotations

import io
import pickle
import re
import struct
from typing import Any

_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F64 = struct.Struct(">d").unpack_from

_NON_READING = frozenset(op[0] for op in (
    pickle.NONE, pickle.NEWTRUE, pickle.NEWFALSE, pickle.TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3,
    pickle.EMPTY_TUPLE, pickle.EMPTY_LIST, pickle.EMPTY_DICT, pickle.EMPTY_SET, pickle.FROZENSET, pickle.LIST,
    pickle.DICT, pickle.OBJ, pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.STACK_GLOBAL, pickle.REDUCE, pickle.POP,
    pickle.POP_MARK, pickle.DUP, pickle.MEMOIZE, pickle.APPEND, pickle.APPENDS, pickle.SETITEM, pickle.SETITEMS,
    pickle.ADDITEMS, pickle.BUILD, pickle.BINPERSID, pickle.NEXT_BUFFER, pickle.READONLY_BUFFER,
))
"""Opcodes whose argument, if any, is on the stack (they read nothing): the unpickler's own method can run
one of them in place, since the stacks are shared; the others hand the rest of the pickle over."""

_BINPUT, _LONG_BINPUT, _BINGET, _LONG_BINGET = 0x71, 0x72, 0x68, 0x6A
_BININT1, _BININT, _BININT2, _LONG1 = 0x4B, 0x4A, 0x4D, 0x8A
_BINUNICODE, _SHORT_BINUNICODE, _BINBYTES, _SHORT_BINBYTES = 0x58, 0x8C, 0x42, 0x43
_MARK, _TUPLE, _TUPLE1, _TUPLE2, _TUPLE3, _EMPTY_TUPLE = 0x28, 0x74, 0x85, 0x86, 0x87, 0x29
_REDUCE, _NEWOBJ, _BINPERSID, _GLOBAL = 0x52, 0x81, 0x51, 0x63
_NEWFALSE, _NEWTRUE, _NONE, _MEMOIZE = 0x89, 0x88, 0x4E, 0x94
_EMPTY_DICT, _EMPTY_LIST, _SETITEMS, _SETITEM, _APPEND = 0x7D, 0x5D, 0x75, 0x73, 0x61
_BINFLOAT, _STOP, _PROTO, _FRAME = 0x47, 0x2E, 0x80, 0x95
_CALL_ARGS = (tuple, list, dict)

_NUMBER_RUN = re.compile(
    rb"(?:J....|\x8a\x05.....|K.|M..|G........"
    rb"|\x8a(?:\x00|\x01.|\x02..|\x03...|\x04....|\x06......|\x07.......|\x08........)){1,4096}+",
    re.DOTALL).match
"""Consecutive whole number opcodes (BININT, BININT1, BININT2, LONG1 of at most 8 bytes, BINFLOAT), at most 4096.

Such a run pushes one int or float per opcode and touches nothing else: no memo, no global, no call, no
allocation beyond its values. ``random.getstate()`` is one of 625 (BININT and 5-byte LONG1 at random), about
half the opcodes of a pimm checkpoint; float lists and step counts make others. Each alternative is one opcode
with its argument, so a match is exactly the opcodes pickle's loop would read one by one, and it never ends
inside an opcode (a run cut by the end of the input stops before the cut opcode, which the loop then meets).
"""
MIN_RUN_BYTES = 40
"""A shorter run is read opcode by opcode (handing it to the C unpickler costs about as much as 8 opcodes)."""
_loads = pickle.loads


def _number_run(data: bytes, start: int, limit: int, stack: list[Any], room: int) -> tuple[int, int]:
    """Push the values of the run of number opcodes at ``start`` (not past ``limit``) onto ``stack``.

    Returns where the run ends and how many opcodes were taken: 0 when it is short (its opcodes are cheaper one
    by one) or has more opcodes than ``room`` (the budget allows; the loop then stops at the same opcode as
    pickle's). The values come from CPython's C unpickler, given exactly the run between MARK and LIST: it
    decodes each opcode with the same functions as pickle's loop and ``struct`` (ints, and floats bit for bit),
    and since the slice holds nothing but number opcodes its memo and globals are never used.
    """
    match = _NUMBER_RUN(data, start, limit)
    if match is None:
        return start, 0  # the opcode at ``start`` is cut: pickle's loop says how
    stop = match.end()
    if stop - start < MIN_RUN_BYTES:
        return stop, 0
    values = _loads(b"(" + data[start:stop] + b"l.")
    if len(values) > room:
        return stop, 0
    stack.extend(values)
    return stop, len(values)


def fast_load(unpickler: Any, data: bytes, stream: io.BytesIO) -> tuple[bool, Any]:
    """Run ``data`` from ``stream``'s position: (True, value) at STOP, or (False, None) once handed over.

    On a hand-over the stacks, memo, budget, stream (and frame) are exactly as pickle's own loop would
    have them at the start of the opcode not handled here; the caller continues with that loop.
    """
    budget = unpickler.budget
    charge = budget.charge
    max_ops = budget.max_ops
    max_bytes = budget.max_bytes
    max_objects = budget.max_objects
    ops = budget.ops
    memo = unpickler.memo
    metastack = unpickler.metastack
    stack = unpickler.stack
    append = stack.append
    find_class = unpickler.find_class
    persistent_load = unpickler.persistent_load
    dispatch = unpickler.dispatch
    end = len(data)
    pos = stream.tell()
    frame_end = -1
    """Where the current frame (protocol 4) ends, -1 outside one: reads must not cross it."""
    limit = end
    soft = pos
    """Below this position neither the end (of input or frame) nor the opcode budget can be reached: every
    opcode reads at least one byte, so ``ops`` grows no faster than ``pos`` (a number run adds one op per
    opcode it spans). At or past it the loop checks both exactly, as pickle's loop does per opcode."""
    run_seen = pos
    """Where the last number run tried ended: an opcode before it is read one by one (a run's tail is short too)."""
    try:
        while True:  # each pass runs opcodes written out here until one that is not
            while True:
                if pos >= soft:
                    if pos >= limit:
                        if pos != frame_end or pos >= end:
                            op = -1
                            break  # the end of the input (or of a truncated frame): pickle's loop says how
                        frame_end, limit = -1, end  # a frame read to its end: pickle's unframer reads on from the file
                    if ops >= max_ops:
                        op = -1
                        break  # pickle's loop counts this opcode and stops with the budget's message
                    soft = min(limit, pos + max_ops - ops)
                op = data[pos]
                pos += 1
                ops += 1
                if op >= 0x68:
                    if op < 0x80:
                        if op == _BINPUT:
                            if pos >= limit:
                                break
                            pos += 1
                            memo[data[pos - 1]] = stack[-1]
                        elif op == _BINGET:
                            if pos >= limit:
                                break
                            key = data[pos]
                            if key not in memo:
                                break
                            pos += 1
                            append(memo[key])
                        elif op == _LONG_BINPUT:
                            if pos + 4 > limit:
                                break
                            pos += 4
                            memo[_U32(data, pos - 4)[0]] = stack[-1]
                        elif op == _LONG_BINGET:
                            if pos + 4 > limit:
                                break
                            key = _U32(data, pos)[0]
                            if key not in memo:
                                break
                            pos += 4
                            append(memo[key])
                        elif op == _TUPLE:
                            items = stack
                            stack = unpickler.stack = metastack.pop()
                            append = unpickler.append = stack.append
                            append(tuple(items))
                        elif op == _EMPTY_DICT:
                            append({})
                        elif op == _SETITEMS:
                            items = stack
                            stack = unpickler.stack = metastack.pop()
                            append = unpickler.append = stack.append
                            target = stack[-1]
                            for i in range(0, len(items), 2):
                                target[items[i]] = items[i + 1]
                        elif op == _SETITEM:
                            value = stack.pop()
                            key = stack.pop()
                            target = stack[-1]
                            target[key] = value
                        else:
                            break  # not written out here: see below
                    else:
                        if op == _MEMOIZE:  # protocol 4 (DCP metadata): after every object
                            memo[len(memo)] = stack[-1]
                        elif op == _LONG1:
                            if pos > run_seen:  # a run not tried yet
                                run_seen, taken = _number_run(data, pos - 1, limit, stack, max_ops - ops + 1)
                                if taken:
                                    pos, ops = run_seen, ops + taken - 1
                                    continue
                            if pos >= limit or pos + 1 + data[pos] > limit:
                                break
                            size = data[pos]
                            pos += 1 + size
                            append(int.from_bytes(data[pos - size:pos], "little", signed=True))
                        elif op == _TUPLE1:
                            stack[-1] = (stack[-1],)
                        elif op == _NEWFALSE:
                            append(False)
                        elif op == _SHORT_BINUNICODE:
                            if pos >= limit or pos + 1 + data[pos] > limit:
                                break
                            size = data[pos]
                            pos += 1 + size
                            append(str(data[pos - size:pos], "utf-8", "surrogatepass"))
                        elif op == _NEWOBJ:
                            if stack and isinstance(stack[-1], _CALL_ARGS):  # Budget.charge inline: the call pays for its args
                                size = len(stack[-1])
                                budget.nbytes += 8 * size
                                budget.objects += size
                                if budget.nbytes > max_bytes or budget.objects > max_objects:
                                    charge()  # adds nothing and raises the budget's own error
                            args = stack.pop()
                            cls = stack.pop()
                            append(cls.__new__(cls, *args))
                        elif op == _TUPLE2:
                            stack[-2:] = [(stack[-2], stack[-1])]
                        elif op == _TUPLE3:
                            stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
                        elif op == _NEWTRUE:
                            append(True)
                        elif op == _PROTO:
                            if pos >= limit or data[pos] > pickle.HIGHEST_PROTOCOL:
                                break
                            unpickler.proto = data[pos]
                            pos += 1
                        elif op == _FRAME:
                            if frame_end >= 0 or pos + 8 > end or pos + 8 + _U64(data, pos)[0] > end:
                                break  # inside a frame, or a frame the input does not hold whole: pickle's unframer
                            pos += 8
                            frame_end = limit = pos + _U64(data, pos - 8)[0]
                            soft = pos  # the next opcode checks the new limit
                        else:
                            break  # not written out here: see below
                elif op < 0x4E:
                    if op == _BININT1:
                        if pos >= limit:
                            break
                        append(data[pos])
                        pos += 1
                    elif op == _BININT:
                        if pos > run_seen:  # a run not tried yet
                            run_seen, taken = _number_run(data, pos - 1, limit, stack, max_ops - ops + 1)
                            if taken:
                                pos, ops = run_seen, ops + taken - 1
                                continue
                        if pos + 4 > limit:
                            break
                        append(_I32(data, pos)[0])
                        pos += 4
                    elif op == _MARK:
                        metastack.append(stack)
                        stack = unpickler.stack = []
                        append = unpickler.append = stack.append
                    elif op == _EMPTY_TUPLE:
                        append(())
                    elif op == _BINFLOAT:
                        if pos > run_seen:  # a run not tried yet
                            run_seen, taken = _number_run(data, pos - 1, limit, stack, max_ops - ops + 1)
                            if taken:
                                pos, ops = run_seen, ops + taken - 1
                                continue
                        if pos + 8 > limit:
                            break
                        append(_F64(data, pos)[0])
                        pos += 8
                    elif op == _BININT2:
                        if pos + 2 > limit:
                            break
                        append(_U16(data, pos)[0])
                        pos += 2
                    elif op == _SHORT_BINBYTES:
                        if pos >= limit or pos + 1 + data[pos] > limit:
                            break
                        size = data[pos]
                        pos += 1 + size
                        append(data[pos - size:pos])
                    elif op == _BINBYTES:
                        if pos + 4 > limit or pos + 4 + _U32(data, pos)[0] > limit:
                            break
                        size = _U32(data, pos)[0]
                        pos += 4 + size
                        append(data[pos - size:pos])
                    elif op == _STOP:
                        value = stack.pop()
                        stream.seek(frame_end if frame_end >= 0 else pos)
                        budget.ops = ops
                        return True, value
                    else:
                        break  # not written out here: see below
                else:
                    if op == _BINUNICODE:
                        if pos + 4 > limit or pos + 4 + _U32(data, pos)[0] > limit:
                            break
                        size = _U32(data, pos)[0]
                        pos += 4 + size
                        append(str(data[pos - size:pos], "utf-8", "surrogatepass"))
                    elif op == _REDUCE:
                        if stack and isinstance(stack[-1], _CALL_ARGS):  # Budget.charge inline: the call pays for its args
                            size = len(stack[-1])
                            budget.nbytes += 8 * size
                            budget.objects += size
                            if budget.nbytes > max_bytes or budget.objects > max_objects:
                                charge()  # adds nothing and raises the budget's own error
                        args = stack.pop()
                        func = stack[-1]
                        stack[-1] = func(*args)
                    elif op == _BINPERSID:
                        pid = stack.pop()
                        append(persistent_load(pid))
                    elif op == _NONE:
                        append(None)
                    elif op == _EMPTY_LIST:
                        append([])
                    elif op == _APPEND:
                        value = stack.pop()
                        target = stack[-1]
                        target.append(value)
                    elif op == _GLOBAL:
                        first = data.find(b"\n", pos, limit)
                        second = data.find(b"\n", first + 1, limit) if first >= 0 else -1
                        if second < 0:
                            break
                        raw = data[pos:first]
                        pos = first + 1  # where pickle's readline leaves the stream, should the name not decode
                        module = raw.decode("utf-8")
                        pos = second + 1
                        name = data[first + 1:second].decode("utf-8")
                        append(find_class(module, name))
                    else:
                        break  # not written out here: see below
            if op in _NON_READING:
                dispatch[op](unpickler)  # metered as in pickle's loop; may pop a mark, so the stack is re-read
                stack = unpickler.stack
                append = unpickler.append
                continue
            if op >= 0:  # an opcode with an argument not written out here, or cut by the end of input or frame:
                pos, ops = pos - 1, ops - 1  # pickle's loop runs it from its start, as if it had not begun
            break
    except BaseException:
        budget.ops = ops
        stream.seek(frame_end if frame_end >= 0 else pos)
        raise
    budget.ops = ops
    if frame_end >= 0:  # pickle's unframer holds the rest of the frame; the file is read up to its end
        unpickler._unframer.current_frame = io.BytesIO(data[pos:frame_end])
        unpickler.read = unpickler._unframer.read
        stream.seek(frame_end)
    else:
        stream.seek(pos)
    return False, None
