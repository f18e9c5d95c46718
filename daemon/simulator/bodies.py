"""Model → response bodies, shaped as a 4.9.7 namesrv/broker/client writes them (ref §3, §9).

Every function returns the Java object tree (Bean / JavaMap / lists) that fastjson would be
handed; `fastjson_writer.to_bytes` turns it into the body. Java hash containers are listed in
their Java iteration order, TreeMaps in key order, so bodies match the capture byte-for-byte in
layout. Every number comes from the model.
"""

from __future__ import annotations

import time
from typing import Any

from daemon.simulator.bodies_v5 import pop_properties, pop_table, timer_runtime
from daemon.simulator.broker import Broker, MessageQueue, RateWindow
from daemon.simulator.consumer import ConsumerClient
from daemon.simulator.fastjson_writer import (
    Bean,
    JavaMap,
    hash_order,
    java_double,
    java_string_hash,
    message_queue_hash,
    string_hash_order,
)
from daemon.simulator.jstack import jstack_text
from daemon.simulator.model import ClusterModel, ConsumerGroup

SERVER_VERSION = 407  # V4_9_7
VERSION_DESC = "V4_9_7"
# MQVersion ordinals the simulator can emulate (ref §1.5); 5.x is 413 and up.
VERSION_DESCS = {407: "V4_9_7", 409: "V4_9_8", 413: "V5_0_0", 433: "V5_1_0", 453: "V5_2_0", 473: "V5_3_0",
                 475: "V5_3_1", 479: "V5_3_3"}
V5_0_0, V5_1_0 = 413, 433


def version_desc(version: int) -> str:
    """`MQVersion.getVersionDesc` of an ordinal the simulator knows."""
    return VERSION_DESCS[version]


def _mq(mq: MessageQueue) -> Bean:
    return Bean(brokerName=mq.broker, queueId=mq.queue_id, topic=mq.topic)


def _mq_map(entries: list[tuple[MessageQueue, Any]]) -> JavaMap:
    """A HashMap<MessageQueue, V> in Java iteration order."""
    values = dict(entries)
    order = hash_order([mq for mq, _ in entries], lambda m: message_queue_hash(m.topic, m.broker, m.queue_id))
    return JavaMap((_mq(mq), values[mq]) for mq in order)


def _broker_data(b: Broker) -> Bean:
    return Bean(brokerAddrs=JavaMap([(b.broker_id, b.addr)]), brokerName=b.name, cluster=b.cluster)


def cluster_info(model: ClusterModel) -> Bean:
    """106 ClusterInfo."""
    names = string_hash_order(model.brokers, 128)
    return Bean(
        brokerAddrTable=JavaMap((n, _broker_data(model.brokers[n])) for n in names),
        clusterAddrTable=JavaMap([(model.cluster, string_hash_order(model.brokers))]),
    )


def topic_route(model: ClusterModel, topic: str) -> Bean | None:
    """105 TopicRouteData, or None when no broker has the topic."""
    holders = [b for b in model.brokers.values() if topic in b.topics]
    if not holders:
        return None
    order = string_hash_order(b.name for b in holders)
    queue_datas = []
    for name in order:
        cfg = model.brokers[name].topics[topic]
        queue_datas.append(
            Bean(brokerName=name, perm=cfg.perm, readQueueNums=cfg.read_queue_nums, topicSysFlag=0,
                 writeQueueNums=cfg.write_queue_nums)
        )  # fmt: skip
    return Bean(
        brokerDatas=[_broker_data(model.brokers[n]) for n in order],
        filterServerTable=JavaMap(),
        queueDatas=queue_datas,
    )


def topic_list(model: ClusterModel) -> Bean:
    """206 TopicList: every topic any broker registered (a HashSet)."""
    seen: dict[str, None] = {}
    for b in model.brokers.values():
        seen.update(dict.fromkeys(b.topics))
    return Bean(topicList=string_hash_order(seen))


def subscription_groups(model: ClusterModel) -> Bean:
    """201 SubscriptionGroupWrapper (ConcurrentHashMap(1024) of SubscriptionGroupConfig)."""
    table = JavaMap(
        (g, Bean(brokerId=0, consumeBroadcastEnable=True, consumeEnable=True, consumeFromMinEnable=True,
                 groupName=g, notifyConsumerIdsChangedEnable=True, retryMaxTimes=16, retryQueueNums=1,
                 whichBrokerWhenConsumeSlowly=1))
        for g in string_hash_order(model.subscription_groups, 1024, concurrent=True)
    )  # fmt: skip
    return Bean(
        dataVersion=Bean(counter=model.subscription_version, timestamp=model.start_epoch_ms),
        subscriptionGroupTable=table,
    )


def _subscription(client: ConsumerClient, topic: str) -> Bean:
    return Bean(classFilterMode=False, codeSet=[], expressionType="TAG", subString="*",
                subVersion=client.sub_versions.get(topic, client.start_ms), tagsSet=[], topic=topic)  # fmt: skip


def consumer_connection(group: ConsumerGroup) -> Bean | None:
    """203 ConsumerConnection, or None when no client of the group is online."""
    if not group.clients:
        return None
    first = group.clients[0]
    subs = JavaMap((t, _subscription(first, t)) for t in string_hash_order(group.subscribed))
    return Bean(
        connectionSet=[
            Bean(clientAddr=c.client_addr, clientId=c.client_id, language="JAVA", version=SERVER_VERSION)
            for c in group.clients
        ],
        consumeFromWhere=group.settings.consume_from_where,
        consumeType=group.consume_type,
        messageModel="CLUSTERING",
        subscriptionTable=subs,
    )


def _properties(client: ConsumerClient, namesrv_addr: str) -> JavaMap:
    s = client.settings
    ident = java_string_hash(client.client_id) & 0xFFFFFFFF
    started = time.strftime("%Y%m%d%H%M%S", time.gmtime(client.start_ms / 1000 - 1800))
    props = {
        "consumeTimestamp": started, "pullThresholdForTopic": "-1", "pullBatchSize": str(s.pull_batch_size),
        "awaitTerminationMillisWhenShutdown": "0",
        "log": f"org.apache.rocketmq.logging.InnerLoggerFactory$InnerLogger@{ident % 0xFFFFFFF:x}",
        "consumeMessageBatchMaxSize": str(s.consume_message_batch_max_size),
        "consumeFromWhere": s.consume_from_where, "pullThresholdForQueue": str(s.pull_threshold_for_queue),
        "subscription": "{}", "PROP_NAMESERVER_ADDR": f"{namesrv_addr};",
        "consumeThreadMax": str(s.consume_thread_max), "unitMode": "false",
        "maxReconsumeTimes": str(s.max_reconsume_times), "PROP_CONSUMEORDERLY": "false", "pullInterval": "0",
        "consumeTimeout": str(s.consume_timeout_min), "consumeThreadMin": str(s.consume_thread_min),
        "suspendCurrentQueueTimeMillis": "1000", "PROP_CONSUMER_START_TIMESTAMP": str(client.start_ms),
        "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "adjustThreadPoolNumsThreshold": "100000",
        "pullThresholdSizeForTopic": "-1",
        "offsetStore": f"org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore@{ident % 0xFFFFFFB:x}",
        "PROP_CLIENT_VERSION": VERSION_DESC, "consumeConcurrentlyMaxSpan": str(s.consume_concurrently_max_span),
        "PROP_THREADPOOL_CORE_SIZE": str(s.consume_thread_min),
        "pullThresholdSizeForQueue": str(s.pull_threshold_size_for_queue_mib), "messageModel": "CLUSTERING",
        "allocateMessageQueueStrategy":
            f"org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@{ident % 0xFFFFFF7:x}",
        "messageListener": f"com.example.orders.OrderListener@{ident % 0xFFFFFF1:x}",
        "defaultMQPushConsumerImpl":
            f"org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl@{ident % 0xFFFFFED:x}",
        "postSubscriptionWhenPull": "false", "consumerGroup": client.group,
    }  # fmt: skip
    props.update(pop_properties(client))
    return JavaMap((k, props[k]) for k in string_hash_order(props, 8, concurrent=True))


def _rate(w: RateWindow, now: float) -> float:
    return float(w.tps(now))


def running_info(client: ConsumerClient, now: float, namesrv_addr: str, jstack: bool) -> Bean:
    """307 ConsumerRunningInfo as the client builds it."""
    mq_table = JavaMap(
        (_mq(mq), Bean(cachedMsgCount=pq.count, cachedMsgMaxOffset=pq.max_offset, cachedMsgMinOffset=pq.min_offset,
                       cachedMsgSizeInMiB=pq.size_mib, commitOffset=pq.commit_offset, droped=pq.dropped,
                       lastConsumeTimestamp=pq.last_consume_ms, lastLockTimestamp=pq.last_lock_ms,
                       lastPullTimestamp=pq.last_pull_ms, locked=True, transactionMsgCount=0,
                       transactionMsgMaxOffset=0, transactionMsgMinOffset=0, tryUnlockTimes=0))
        for mq, pq in sorted(client.pqs.items())
    )  # fmt: skip
    status = JavaMap()
    topics = sorted({mq.topic for mq in client.pqs})
    for topic in topics:
        st = client.topic_status(topic, now)
        ok = _rate(st.consume_ok, now)
        status.append((topic, Bean(
            # consumeFailedMsgs is the client's count over its stats window (the last minute here).
            consumeFailedMsgs=round(st.consume_failed.tps(now) * min(60.0, max(now - st.consume_failed.start, 1.0))),
            consumeFailedTPS=_rate(st.consume_failed, now), consumeOKTPS=ok,
            consumeRT=1000.0 / client.settings.consume_rate_per_thread if ok > 0 else 0.0,
            pullRT=st.pull_rt_sum / st.pull_rt_n if st.pull_rt_n else 0.0, pullTPS=_rate(st.pulled, now),
        )))  # fmt: skip
    subs = sorted(topics, key=lambda t: f"{t}@*")  # TreeSet<SubscriptionData>: topic@subString order
    return Bean(
        jstack=jstack_text(client) if jstack else None,
        mqPopTable=pop_table(client, _mq),
        mqTable=mq_table,
        properties=_properties(client, namesrv_addr),
        statusTable=status,
        subscriptionSet=[_subscription(client, t) for t in subs],
    )


def consume_stats(model: ClusterModel, broker: Broker, group: str, topic: str | None) -> Bean:
    """208 ConsumeStats of one broker (pullOffset from 5.1.0 on)."""
    g = model.groups.get(group)
    topics = [topic] if topic else string_hash_order(broker.topics_with_offsets(group))
    entries: list[tuple[MessageQueue, Bean]] = []
    tps = 0.0
    for t in topics:
        cfg = broker.topics.get(t)
        if cfg is None:
            continue
        if g is not None and g.clients and t not in g.subscribed and not (g.pop and t.startswith(f"%RETRY%{group}_")):
            continue  # an online group that does not subscribe the topic is skipped (a pop retry topic is its own)
        for q in range(cfg.read_queue_nums):
            cq = broker.queue(t, q)
            max_off = cq.max_offset if cq else 0
            commit = max(broker.committed(group, t, q), 0)
            last = cq.store_time(commit - 1) if cq and commit > 0 else 0
            entry = Bean(brokerOffset=max_off, consumerOffset=commit, lastTimestamp=last)
            if model.version >= V5_1_0:
                # 5.1+: where the group's last pull left off, so lag splits into in-flight and waiting.
                entry["pullOffset"] = max(commit, broker.pull_offsets.get((group, t, q), commit))
            entries.append((MessageQueue(t, broker.name, q), entry))
        stats = broker.group_get_stats.get((group, t))
        tps += stats.tps(model.now) if stats else 0.0
    return Bean(consumeTps=float(tps), offsetTable=_mq_map(entries))


def topic_stats(broker: Broker, topic: str) -> Bean | None:
    """202 TopicStatsTable of one broker, or None when the broker lacks the topic."""
    cfg = broker.topics.get(topic)
    if cfg is None:
        return None
    entries = []
    for q in range(cfg.write_queue_nums):
        cq = broker.queue(topic, q)
        max_off = cq.max_offset if cq else 0
        last = cq.store_time(max_off - 1) if cq and max_off > 0 else 0
        entries.append(
            (
                MessageQueue(topic, broker.name, q),
                Bean(lastUpdateTimestamp=last, maxOffset=max_off, minOffset=0),
            )
        )
    return Bean(offsetTable=_mq_map(entries))


def _human3(ms: int) -> str:
    """UtilAll.timeMillisToHumanString3 (local time): `2026-11-21#23:38:35:081`."""
    t = time.localtime(ms / 1000)
    return time.strftime("%Y-%m-%d#%H:%M:%S", t) + f":{ms % 1000:03d}"


def consume_time_span(model: ClusterModel, broker: Broker, topic: str, group: str) -> Bean | None:
    """303 QueryConsumeTimeSpanBody, or None when the broker lacks the topic."""
    cfg = broker.topics.get(topic)
    if cfg is None:
        return None
    spans = []
    now_ms = model.epoch_ms()
    for q in range(cfg.write_queue_nums):
        cq = broker.queue(topic, q)
        max_off = cq.max_offset if cq else 0
        min_ts = cq.store_time(0) if cq and max_off > 0 else -1
        max_ts = cq.store_time(max_off - 1) if cq and max_off > 0 else 0
        commit = broker.committed(group, topic, q)
        consume_ts = cq.store_time(commit - 1) if cq and commit > 0 else min_ts
        delay = now_ms - cq.store_time(commit) if cq and commit < max_off else 0
        spans.append(Bean(
            consumeTimeStamp=consume_ts, consumeTimeStampStr=_human3(consume_ts), delayTime=delay,
            maxTimeStamp=max_ts, maxTimeStampStr=_human3(max_ts), messageQueue=_mq(MessageQueue(topic, broker.name, q)),
            minTimeStamp=min_ts, minTimeStampStr=_human3(min_ts),
        ))  # fmt: skip
    return Bean(consumeTimeSpanSet=spans)


def _tps_text(w: RateWindow, now: float) -> str:
    # "<10s> <60s> <600s> " — a window's item stays empty until that much time has passed.
    return "".join(
        f"{java_double(w.tps(now, win))} " for win in (10, 60, 600) if win == 10 or w.has_window(now, win)
    )


def _runtime_text(seconds: int) -> str:
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"[ {d} days, {h} hours, {m} minutes, {s} seconds ]"


def runtime_info(model: ClusterModel, broker: Broker) -> Bean:
    """28 KVTable: every value a string, as GET_BROKER_RUNTIME_INFO returns it."""
    now = model.now
    puts = broker.put_stats.total
    gets = broker.get_stats.total
    first_ts = min((cq.store_ts[0] for cq in broker.queues.values() if len(cq.store_ts)), default=-1)
    up_s = int((model.epoch_ms() - broker.boot_epoch_ms) / 1000)
    table = {
        "msgPutTotalTodayNow": str(puts), "sendThreadPoolQueueHeadWaitTimeMills": "0",
        "putMessageDistributeTime": "null" if up_s < 60 else
            f"[<=0ms]:{broker.put_stats.tps(now) * 60:.0f} [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 "
            "[200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
        "queryThreadPoolQueueHeadWaitTimeMills": "0", "remainHowManyDataToFlush": "0 B",
        "msgGetTotalTodayNow": str(gets), "queryThreadPoolQueueSize": "0", "bootTimestamp": str(broker.boot_epoch_ms),
        "msgPutTotalYesterdayMorning": "0", "msgGetTotalYesterdayMorning": "0", "pullThreadPoolQueueSize": "0",
        "commitLogMinOffset": "0", "pullThreadPoolQueueHeadWaitTimeMills": "0", "runtime": _runtime_text(up_s),
        "dispatchMaxBuffer": "0", "brokerVersion": str(model.version), "putTps": _tps_text(broker.put_stats, now),
        "getMissTps": _tps_text(broker.get_stats, now), "getTransferedTps": _tps_text(broker.get_stats, now),
        "commitLogDiskRatio_/home/rocketmq/store/commitlog": "0.25", "EndTransactionQueueSize": "0",
        "getTotalTps": _tps_text(broker.get_stats, now), "consumeQueueDiskRatio": "0.25",
        "pageCacheLockTimeMills": "0", "commitLogDiskRatio": "0.25", "getFoundTps": _tps_text(broker.get_stats, now),
        "EndTransactionThreadPoolQueueCapacity": "100000", "putMessageFailedTimes": "0", "putLatency999": "1.00",
        "commitLogMaxOffset": str(broker.put_bytes), "getMessageEntireTimeMax": "12", "msgPutTotalTodayMorning": "0",
        "putMessageTimesTotal": str(max(puts, 1)), "putLatency99": "0.99", "msgGetTotalTodayMorning": "0",
        "brokerVersionDesc": version_desc(model.version), "sendThreadPoolQueueSize": "0", "startAcceptSendRequestTimeStamp": "0",
        "putMessageEntireTimeMax": "8", "earliestMessageTimeStamp": str(first_ts),
        "commitLogDirCapacity": "Total : 252.0 GiB, Free : 189.0 GiB.", "remainTransientStoreBufferNumbs": "2147483647",
        "queryThreadPoolQueueCapacity": "20000",
        "putMessageAverageSize": java_double(broker.put_bytes / puts if puts else 0.0), "dispatchBehindBytes": "0",
        "putMessageSizeTotal": str(broker.put_bytes), "sendThreadPoolQueueCapacity": "10000",
        "pullThreadPoolQueueCapacity": "100000",
    }  # fmt: skip
    if model.version >= V5_0_0:
        table.update(_runtime_5x(table, model.version))
        table.update(timer_runtime(model, broker.name))
    table.update(model.runtime_overrides.get(broker.name, {}))
    return Bean(table=JavaMap((k, table[k]) for k in string_hash_order(table, 64)))


def _runtime_5x(table: dict[str, str], version: int) -> dict[str, str]:
    """The keys a 5.x broker spells or adds differently (ref §3.8)."""
    changed = {
        "getTransferredTps": table.pop("getTransferedTps"), "brokerVersionDesc": version_desc(version),
        "brokerActive": "true", "timerReadBehind": "0", "timerOffsetBehind": "0", "timerCongestNum": "0",
        "timerEnqueueTps": "0.0", "timerDequeueTps": "0.0", "litePullThreadPoolQueueSize": "0",
        "litePullThreadPoolQueueCapacity": "20000", "ackThreadPoolQueueSize": "0",
        "ackThreadPoolQueueCapacity": "10000",
    }
    if version <= 479:  # brokerVersion was removed after 5.3.3
        changed["brokerVersion"] = str(version)
    else:
        table.pop("brokerVersion", None)
    return changed


def consumed_by(model: ClusterModel, broker: Broker, topic: str) -> Bean:
    """300 GroupList: online subscribers of the topic plus groups with offsets for it on this broker."""
    groups = {g.name for g in model.groups.values() if g.clients and topic in g.subscribed}
    groups |= {g for g, t, _ in broker.consumer_offsets if t == topic}
    return Bean(groupList=string_hash_order(sorted(groups)))


def all_consumer_offsets(broker: Broker) -> Bean:
    """43 ConsumerOffsetManager: `topic@group` → {queueId: offset} (integer keys unquoted)."""
    table: dict[str, dict[int, int]] = {}
    for (g, t, q), off in sorted(broker.consumer_offsets.items()):
        table.setdefault(f"{t}@{g}", {})[q] = off
    return Bean(
        offsetTable=JavaMap(
            (k, JavaMap(table[k].items())) for k in string_hash_order(table, 512, concurrent=True)
        )
    )
