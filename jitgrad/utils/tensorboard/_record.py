"""The TFRecord framing of TensorBoard event files and the writer that appends to one.

An event file is a sequence of records, each ``uint64 length | uint32 masked_crc32c(length) |
data | uint32 masked_crc32c(data)`` (little-endian), where ``data`` is one serialized ``Event``
protocol buffer and the checksum is CRC-32C (Castagnoli) masked as TensorFlow masks it. Written
in pure Python, so no TensorFlow, TensorBoard or protobuf package is needed at run time.
"""

from __future__ import annotations

import atexit
import itertools
import os
import socket
import struct
import threading
import time
import weakref

from ._proto import event

_POLY = 0x82F63B78  # CRC-32C, reflected


def _make_table() -> tuple:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    """The CRC-32C (Castagnoli) checksum of ``data``.

    Args:
        data: The bytes to check.

    Returns:
        The 32-bit checksum.
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The CRC-32C of ``data`` masked as TFRecord stores it.

    Args:
        data: The bytes to check.

    Returns:
        ``((crc >> 15) | (crc << 17)) + 0xa282ead8`` modulo 2**32.
    """
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One TFRecord: the length, its masked CRC, the data and the data's masked CRC.

    Args:
        data: A serialized protocol buffer.

    Returns:
        The record's bytes.
    """
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


_global_uid = itertools.count()  # (next() is atomic under the GIL)
_uid_lock = threading.Lock()
_open_writers: weakref.WeakSet = weakref.WeakSet()


def _flush_all_at_exit() -> None:
    for writer in list(_open_writers):
        try:
            writer.flush()
        except Exception:  # noqa: BLE001  (a file already gone cannot fail the exit)
            pass


atexit.register(_flush_all_at_exit)


class EventFileWriter:
    """Writes serialized ``Event`` protocol buffers to a new event file in ``logdir``.

    Events are queued and written when ``max_queue`` of them wait, on :meth:`flush`, on
    :meth:`close`, every ``flush_secs`` seconds (a daemon thread; at once when ``flush_secs``
    is 0 or less) and when the interpreter exits, so that events survive a script that never
    closes its writer.

    Args:
        logdir: The directory of the event file (created if missing).
        max_queue: How many events wait before an add writes them.
        flush_secs: How often, in seconds, the pending events are written.
        filename_suffix: Appended to the event file's name.
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        self._logdir = logdir
        os.makedirs(logdir, exist_ok=True)
        with _uid_lock:
            uid = next(_global_uid)
        self._file_name = os.path.join(
            logdir, "events.out.tfevents.%010d.%s.%s.%s"  # noqa: UP031  (as TensorBoard)
            % (time.time(), socket.gethostname(), os.getpid(), uid)) + filename_suffix
        self._file = open(self._file_name, "wb")  # noqa: SIM115  (closed by close())
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._pending: list[bytes] = []
        self._lock = threading.RLock()
        self._closed = False
        self._stop = threading.Event()
        self.add_event(event(wall_time=time.time(), file_version="brain.Event:2",
                             source_writer="jitgrad.utils.tensorboard"))
        self.flush()
        _open_writers.add(self)
        self._thread = None  # (flush_secs <= 0: every event is written at once)
        if flush_secs > 0:
            self._thread = threading.Thread(target=_flush_loop, daemon=True,
                                            args=(weakref.ref(self), self._stop, flush_secs),
                                            name="jitgrad-tensorboard-flush")
            self._thread.start()

    def get_logdir(self) -> str:
        """The directory where the event file is written."""
        return self._logdir

    @property
    def file_name(self) -> str:
        """The event file's path."""
        return self._file_name

    def add_event(self, serialized_event: bytes) -> None:
        """Queues one serialized ``Event``; writes the queue when it holds ``max_queue``.

        Args:
            serialized_event: The event's protocol buffer bytes.

        Raises:
            OSError: if the writer is closed.
        """
        with self._lock:
            if self._closed:
                raise OSError("Writer is closed")
            self._pending.append(serialized_event)
            if len(self._pending) >= self._max_queue or self._flush_secs <= 0:
                self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            self._file.write(b"".join(frame_record(e) for e in self._pending))
            self._pending.clear()
        self._file.flush()

    def flush(self) -> None:
        """Writes every queued event to disk.

        Raises:
            OSError: if the writer is closed.
        """
        with self._lock:
            if self._closed:
                raise OSError("Writer is closed")
            self._write_pending()

    def close(self) -> None:
        """Writes the queued events, stops the flushing thread and closes the file. A second
        close does nothing."""
        with self._lock:
            if self._closed:
                return
            self._write_pending()
            self._closed = True
            self._file.close()
            _open_writers.discard(self)
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __del__(self) -> None:
        # a writer dropped without close() still writes what it queued
        try:
            with self._lock:
                if not self._closed:
                    self._write_pending()
                    self._closed = True
                    self._file.close()
            self._stop.set()
        except Exception:  # noqa: BLE001  (half-built, or at interpreter exit)
            pass


def _flush_loop(writer_ref: weakref.ref, stop: threading.Event, flush_secs: float) -> None:
    # holds the writer only weakly, so an unreferenced writer can still be collected
    while not stop.wait(flush_secs):
        writer = writer_ref()
        if writer is None:
            return
        with writer._lock:
            if writer._closed:
                return
            writer._write_pending()
        del writer
