"""The `jstack` text a 4.9.x client puts into its running info (`MixAll.jstack` format).

Each thread is a header line `%-40sTID: n STATE: s` followed by one `%-40s<frame>` line per stack
frame and a blank line. Consume threads come from the model: a thread blocked on a message shows
the handler hanging (Thread.sleep or a socket read) under `ConsumeRequest.run`; the others wait
for work in `LinkedBlockingQueue.take`.
"""

from __future__ import annotations

from daemon.simulator.consumer import ConsumerClient, ConsumeThread

JDK = "java.base@17.0.15/"
HANDLER = "app//com.example.orders.OrderListener.consumeMessage(OrderListener.java:57)"

_POOL_WAIT = [
    JDK + "jdk.internal.misc.Unsafe.park(Native Method)",
    JDK + "java.util.concurrent.locks.LockSupport.park(LockSupport.java:341)",
    JDK
    + "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionNode.block(AbstractQueuedSynchronizer.java:506)",
    JDK + "java.util.concurrent.ForkJoinPool.unmanagedBlock(ForkJoinPool.java:3465)",
    JDK + "java.util.concurrent.ForkJoinPool.managedBlock(ForkJoinPool.java:3436)",
    JDK
    + "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await(AbstractQueuedSynchronizer.java:1630)",
    JDK + "java.util.concurrent.LinkedBlockingQueue.take(LinkedBlockingQueue.java:435)",
    JDK + "java.util.concurrent.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:1062)",
    JDK + "java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1122)",
    JDK + "java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    JDK + "java.lang.Thread.run(Thread.java:840)",
]

_CONSUME_REQUEST = [
    "app//org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run(ConsumeMessageConcurrentlyService.java:402)",
    JDK + "java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)",
    JDK + "java.util.concurrent.FutureTask.run(FutureTask.java:264)",
    JDK + "java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    JDK + "java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    JDK + "java.lang.Thread.run(Thread.java:840)",
]

_HANG = {
    "sleep": [JDK + "java.lang.Thread.sleep(Native Method)", HANDLER],
    "socket": [
        JDK + "sun.nio.ch.Net.poll(Native Method)",
        JDK + "sun.nio.ch.NioSocketImpl.park(NioSocketImpl.java:186)",
        JDK + "sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:290)",
        JDK + "sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:314)",
        JDK + "sun.nio.ch.NioSocketImpl.read(NioSocketImpl.java:355)",
        JDK + "sun.nio.ch.NioSocketImpl$1.read(NioSocketImpl.java:808)",
        JDK + "java.net.Socket$SocketInputStream.read(Socket.java:966)",
        JDK + "java.io.BufferedInputStream.fill(BufferedInputStream.java:244)",
        JDK + "java.io.BufferedInputStream.read1(BufferedInputStream.java:284)",
        JDK + "java.io.BufferedInputStream.read(BufferedInputStream.java:343)",
        JDK + "sun.net.www.http.HttpClient.parseHTTPHeader(HttpClient.java:791)",
        JDK + "sun.net.www.http.HttpClient.parseHTTP(HttpClient.java:726)",
        JDK + "sun.net.www.protocol.http.HttpURLConnection.getInputStream0(HttpURLConnection.java:1688)",
        JDK + "sun.net.www.protocol.http.HttpURLConnection.getInputStream(HttpURLConnection.java:1589)",
        "app//com.example.orders.InventoryClient.reserve(InventoryClient.java:88)",
        HANDLER,
    ],
}

# Client infrastructure threads (name, tid, state, frames), as in the captured dump.
_INFRA: list[tuple[str, int, str, list[str]]] = [
    ("main", 1, "WAITING", [JDK + "java.lang.Object.wait(Native Method)", JDK + "java.lang.Thread.join(Thread.java:1313)",
                            JDK + "java.lang.Thread.join(Thread.java:1381)", "app//com.example.orders.Main.main(Main.java:46)"]),
    ("PullMessageService", 17, "WAITING", _POOL_WAIT[:7] + [
        "app//org.apache.rocketmq.client.impl.consumer.PullMessageService.run(PullMessageService.java:95)",
        JDK + "java.lang.Thread.run(Thread.java:840)"]),
    ("RebalanceService", 18, "TIMED_WAITING", [
        JDK + "jdk.internal.misc.Unsafe.park(Native Method)",
        JDK + "java.util.concurrent.locks.LockSupport.parkNanos(LockSupport.java:252)",
        "app//org.apache.rocketmq.common.CountDownLatch2.await(CountDownLatch2.java:114)",
        "app//org.apache.rocketmq.common.ServiceThread.waitForRunning(ServiceThread.java:139)",
        "app//org.apache.rocketmq.client.impl.consumer.RebalanceService.run(RebalanceService.java:40)",
        JDK + "java.lang.Thread.run(Thread.java:840)"]),
    ("NettyClientSelector_1", 20, "RUNNABLE", [
        JDK + "sun.nio.ch.EPoll.wait(Native Method)",
        JDK + "sun.nio.ch.EPollSelectorImpl.doSelect(EPollSelectorImpl.java:118)",
        JDK + "sun.nio.ch.SelectorImpl.lockAndDoSelect(SelectorImpl.java:129)",
        JDK + "sun.nio.ch.SelectorImpl.select(SelectorImpl.java:141)",
        "app//io.netty.channel.nio.NioEventLoop.run(NioEventLoop.java:810)",
        JDK + "java.lang.Thread.run(Thread.java:840)"]),
    ("MQClientFactoryScheduledThread", 15, "TIMED_WAITING", [
        JDK + "jdk.internal.misc.Unsafe.park(Native Method)",
        JDK + "java.util.concurrent.locks.LockSupport.parkNanos(LockSupport.java:252)",
        JDK + "java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.take(ScheduledThreadPoolExecutor.java:1182)",
        JDK + "java.util.concurrent.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:1062)",
        JDK + "java.lang.Thread.run(Thread.java:840)"]),
]  # fmt: skip

_FIRST_CONSUME_TID = 26


def _thread(name: str, tid: int, state: str, frames: list[str]) -> str:
    lines = [f"{name:<40}TID: {tid} STATE: {state}"] + [f"{name:<40}{f}" for f in frames]
    return "\n".join(lines) + "\n\n"


def _consume_thread(group: str, th: ConsumeThread) -> str:
    name = f"ConsumeMessageThread_{group}_{th.index}"
    tid = _FIRST_CONSUME_TID + th.index - 1
    if th.holding is None:
        return _thread(name, tid, "WAITING", _POOL_WAIT)
    hang = _HANG.get(th.blocked_style, _HANG["sleep"])
    state = "TIMED_WAITING" if th.blocked_style == "sleep" else "RUNNABLE"
    return _thread(name, tid, state, hang + _CONSUME_REQUEST)


def jstack_text(client: ConsumerClient) -> str:
    """The thread dump of a client: infrastructure threads plus its consume threads."""
    parts = [_thread(*t) for t in _INFRA]
    parts += [_consume_thread(client.group, th) for th in client.threads]
    return "".join(parts)
