"""Iterators whose producer outlives the consumer's ``async for`` safely.

`Evaluator.stream` and `Evaluator.run` hand out results while judges keep running. Written as
async generators that own a task group, they break anyio's rule that a task group must not
span a ``yield``: a consumer that ``break``s out without closing the generator leaves it to
the event loop's finaliser, which closes it from another task and cancels the *consumer's*
task by way of the task group's scope (a stray ``CancelledError`` far from its cause).

`Feed` avoids the task group: on asyncio the producer runs in a task of its own, under a
cancel scope of its own, and the consumer reads what it publishes. Closing the feed (``aclose``,
``async with``, ``contextlib.aclosing``), cancelling the consumer while it waits, or dropping
the feed unclosed (garbage collection) cancels the producer only, never the consumer. An
exception escaping the producer (a judge's ``KeyboardInterrupt``, say) is re-raised, bare, to
the consumer at its next read. Other backends fall back to a task group spanning the reads,
where ``aclosing`` is required as with any async generator.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import suppress
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

__all__ = ["Feed", "Handoff", "Outlet", "single_exception"]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

_LIVE: set[asyncio.Task[None]] = set()
"""Producer tasks still running (asyncio keeps only weak references to tasks)."""


def single_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception a caller should see for ``group`` escaping a task group of judges.

    Judges run alone or inside juries; callers must see the same shape either way, so the
    first exception that is not a cancellation is unwrapped from (nested) groups. A group of
    cancellations only is returned unchanged.
    """
    cancelled = anyio.get_cancelled_exc_class()
    pending: deque[BaseException] = deque(group.exceptions)
    while pending:
        exc = pending.popleft()
        if isinstance(exc, BaseExceptionGroup):
            pending.extendleft(reversed(exc.exceptions))
        elif not isinstance(exc, cancelled):
            return exc
    return group


_END: Any = object()
"""Handed to a waiting consumer when the producer has finished."""


class Handoff(Generic[T]):
    """The rendezvous between a feed's producer task and its consumer (asyncio only).

    Two ways to hand an item over, each what a memory object stream gave the feed without its
    checkpoints and events:

    - `publish` (`Evaluator.stream`) hands an item to the consumer waiting in `take` (the
      consumer's task resumes with it), or waits until the consumer takes it. An item is taken
      at most once and only while its publisher still waits for it; a publisher cancelled
      while waiting withdraws its item.
    - `reserve` and `put` (`Evaluator.run`) bound what is produced ahead of the consumer by
      ``slots``: a producer takes a slot before it starts an item, and `put` gives the finished
      item to a waiting consumer (the producer keeps its slot and goes on) or leaves it in the
      buffer with the slot, which is freed when the consumer takes it. The producer never
      waits for its own item to be taken, and items started but not yet taken never exceed
      ``slots``.

    `close` (the consumer's end) drops what is buffered and makes every waiting and later
    `publish`, `reserve` and `put` raise `anyio.BrokenResourceError`; after `end` (the
    producer's end) `take` raises `anyio.EndOfStream` once the items offered are taken.
    `tests/engine/test_engine_handoff.py` runs random schedules against the memory stream and
    checks both deliver the same items.

    Args:
        loop: The running loop (futures are created on it).
        slots: Items a producer may have started and not yet seen taken (`reserve`).
    """

    __slots__ = ("_free", "_idle", "_loop", "_offers", "_reader", "closed", "ended")

    def __init__(self, loop: asyncio.AbstractEventLoop, slots: int = 0) -> None:
        self._loop = loop
        self._offers: deque[tuple[T, asyncio.Future[bool] | None]] = deque()
        self._reader: asyncio.Future[T] | None = None
        self._free = slots
        self._idle: deque[asyncio.Future[bool]] = deque()
        self.closed = False
        self.ended = False

    def _hand(self, item: T) -> bool:
        """Give ``item`` to the consumer if it waits in `take` (it resumes with it)."""
        reader = self._reader
        if reader is None or reader.done():
            return False
        self._reader = None
        reader.set_result(item)
        return True

    async def publish(self, item: T) -> None:
        """Give ``item`` to the consumer; return once it took it (at once if it waits).

        Raises:
            anyio.BrokenResourceError: the consumer closed its end (the item was not taken).
        """
        if self.closed:
            raise anyio.BrokenResourceError
        if self._hand(item):
            return
        taken: asyncio.Future[bool] = self._loop.create_future()
        entry = (item, taken)
        self._offers.append(entry)
        try:
            consumed = await taken
        except BaseException:
            if not taken.done() or taken.cancelled():
                with suppress(ValueError):
                    self._offers.remove(entry)
            raise
        if not consumed:
            raise anyio.BrokenResourceError

    async def reserve(self) -> None:
        """Take a slot: at once if one is free, else once the consumer took a buffered item.

        Raises:
            anyio.BrokenResourceError: the consumer closed its end.
        """
        if self.closed:
            raise anyio.BrokenResourceError
        if self._free > 0:
            self._free -= 1
            return
        granted: asyncio.Future[bool] = self._loop.create_future()
        self._idle.append(granted)
        try:
            if not await granted:
                raise anyio.BrokenResourceError
        except BaseException:
            if not granted.done():
                self._idle.remove(granted)
            elif not granted.cancelled() and granted.result():
                self.release()  # granted, then cancelled before it resumed: pass it on
            raise

    def release(self) -> None:
        """Free a slot `reserve` gave (the producer started nothing with it)."""
        idle = self._idle
        while idle:
            granted = idle.popleft()
            if not granted.done():
                granted.set_result(True)
                return
        self._free += 1

    def put(self, item: T) -> bool:
        """Hand over ``item``, made under a slot, without waiting for the consumer.

        Returns:
            True if the waiting consumer took it (the caller keeps its slot), False if it was
            buffered (the slot stays with the item until the consumer takes it).

        Raises:
            anyio.BrokenResourceError: the consumer closed its end.
        """
        if self.closed:
            raise anyio.BrokenResourceError
        if self._hand(item):
            return True
        self._offers.append((item, None))
        return False

    def take_nowait(self) -> T:
        """The oldest item offered, taken now.

        Raises:
            anyio.WouldBlock: none is offered and the producer has not finished.
            anyio.EndOfStream: none is offered and the producer has finished.
        """
        offers = self._offers
        while offers:
            item, taken = offers.popleft()
            if taken is None:  # put under a slot: the slot is free again
                self.release()
                return item
            if not taken.done():  # else its publisher was cancelled: withdrawn
                taken.set_result(True)
                return item
        if self.ended:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def take(self) -> T:
        """The next item, waiting for one (see `take_nowait`)."""
        try:
            return self.take_nowait()
        except anyio.WouldBlock:
            pass
        reader: asyncio.Future[T] = self._loop.create_future()
        self._reader = reader
        try:
            item = await reader
        finally:
            if self._reader is reader:
                self._reader = None
        if item is _END:
            raise anyio.EndOfStream
        return item

    def end(self) -> None:
        """The producer has finished: a waiting and every later `take` ends the stream."""
        self.ended = True
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.set_result(_END)

    def withdraw(self) -> None:
        """Drop the items buffered by `put` (the producer failed: they are not delivered)."""
        self._offers = deque(entry for entry in self._offers if entry[1] is not None)

    def close(self) -> None:
        """The consumer's end is closed: producers waiting now or later are refused."""
        self.closed = True
        offers, self._offers = self._offers, deque()
        for _, taken in offers:
            if taken is not None and not taken.done():
                taken.set_result(False)
        idle, self._idle = self._idle, deque()
        for granted in idle:
            if not granted.done():
                granted.set_result(False)


class Outlet(Protocol[T_contra]):
    """A producer's end of a `Feed` (a `Handoff`, or `_StreamOutlet` on other backends)."""

    async def publish(self, item: T_contra) -> None:
        """Hand ``item`` over and wait until the consumer took it."""

    async def reserve(self) -> None:
        """Take one of the feed's slots (see `Handoff.reserve`)."""

    def release(self) -> None:
        """Free a slot that started nothing."""

    def put(self, item: T_contra) -> bool:
        """Hand over ``item`` made under a slot; True if the caller keeps its slot."""


Produce = Callable[[Outlet[T]], Awaitable[None]]
"""A feed's producer: ``produce(outlet)`` hands items over and returns when there are no more."""


class _StreamOutlet(Generic[T]):
    """`Outlet` over a memory object stream with a buffer of ``slots`` (other backends)."""

    def __init__(self, send: MemoryObjectSendStream[T], slots: int) -> None:
        self._send = send
        self._slots = anyio.Semaphore(slots) if slots else None

    async def publish(self, item: T) -> None:
        await self._send.send(item)

    async def reserve(self) -> None:
        assert self._slots is not None
        await self._slots.acquire()

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def put(self, item: T) -> bool:
        self._send.send_nowait(item)  # never full: at most ``slots`` items are buffered
        return False


class _Producer(Generic[T]):
    """The detached side of a `Feed`: it must hold no reference to the feed (see `Feed`)."""

    def __init__(self, produce: Produce[T], handoff: Handoff[T]) -> None:
        self.produce = produce
        self.handoff = handoff
        self.scope = anyio.CancelScope()
        self.failure: BaseException | None = None

    async def run(self) -> None:
        try:
            with self.scope:
                await self.produce(self.handoff)
        except anyio.BrokenResourceError:
            pass  # the consumer closed its end: nothing more is wanted
        except BaseException as exc:  # re-raised to the consumer, after what was taken
            if isinstance(exc, BaseExceptionGroup):
                exc = single_exception(exc)
            self.failure = exc
            self.handoff.withdraw()
        finally:
            self.handoff.end()


class Feed(Generic[T]):
    """An async iterator (and async context manager) fed by a detached producer.

    The producer task references only its `_Producer`, never the feed, so a feed the
    consumer dropped without closing is garbage-collected and its ``__del__`` cancels the
    producer.

    Args:
        produce: ``produce(outlet)`` hands items over through its `Outlet` and returns when
            there are no more: ``await outlet.publish(item)`` waits until the consumer took
            the item; with ``slots``, ``await outlet.reserve()`` before starting an item and
            ``outlet.put(item)`` when it is done never let more than ``slots`` items be
            started and not yet taken (see `Handoff`).
        slots: The bound for `reserve` (0: the producer only publishes).
    """

    def __init__(self, produce: Produce[T], slots: int = 0) -> None:
        self._produce = produce
        self._slots = slots
        self._receive: Handoff[T] | None = None
        self._producer: _Producer[T] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fallback: AsyncGenerator[T, None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ iteration
    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        if self._closed:
            raise StopAsyncIteration
        if self._receive is None and self._fallback is None:
            self._start()
        if self._fallback is not None:
            return await self._fallback.__anext__()
        receive = self._receive
        assert receive is not None and self._producer is not None
        try:
            if receive._offers:  # an item offered already: no `take` coroutine (or call)
                try:
                    return receive.take_nowait()
                except anyio.WouldBlock:  # every one withdrawn: wait for the next
                    pass
            return await receive.take()
        except anyio.EndOfStream:
            self._closed = True
            failure, self._producer.failure = self._producer.failure, None
            if failure is not None:
                raise failure from None
            raise StopAsyncIteration from None
        except BaseException:
            self._producer.scope.cancel()  # the consumer was cancelled: stop producing
            raise

    async def __aenter__(self) -> Feed[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the producer (running judges are cancelled) and wait until it has stopped."""
        self._closed = True
        if self._fallback is not None:
            await self._fallback.aclose()
            return
        if self._producer is not None:
            self._producer.scope.cancel()
        task = self._task
        if task is not None and not task.done():
            done = anyio.Event()
            task.add_done_callback(lambda _: done.set())
            with anyio.CancelScope(shield=True):
                await done.wait()
        if self._receive is not None:
            self._receive.close()

    def __del__(self) -> None:
        # Dropped without closing: cancel the producer from its loop (never the consumer).
        loop, producer, task = self._loop, self._producer, self._task
        if self._receive is not None:
            self._receive.close()
        if task is not None and not task.done() and loop is not None and producer is not None:
            with suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(producer.scope.cancel)

    # ------------------------------------------------------------------ producer
    def _start(self) -> None:
        try:
            loop = asyncio.get_running_loop()
            on_asyncio = asyncio.current_task(loop) is not None
        except RuntimeError:
            on_asyncio = False
        if not on_asyncio:
            self._fallback = self._grouped()
            return
        self._receive = handoff = Handoff[T](loop, self._slots)
        self._producer = producer = _Producer(self._produce, handoff)
        self._loop = loop
        task = loop.create_task(producer.run())
        _LIVE.add(task)
        task.add_done_callback(_LIVE.discard)
        self._task = task

    async def _grouped(self) -> AsyncGenerator[T, None]:
        """Other backends: a task group spanning the reads (close the feed when done)."""
        send, receive = anyio.create_memory_object_stream[T](self._slots)
        outlet = _StreamOutlet(send, self._slots)

        async def produce() -> None:
            async with send:
                await self._produce(outlet)

        async with receive, anyio.create_task_group() as tg:
            tg.start_soon(produce)
            try:
                async for item in receive:
                    outlet.release()  # a slot's item was taken (no-op without slots)
                    yield item
            except GeneratorExit:
                tg.cancel_scope.cancel()
