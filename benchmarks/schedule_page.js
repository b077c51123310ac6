// The synthetic schedule and diff stream of benchmarks/schedule_page.py, evaluated in the page.
() => {
  const HOUR = 3600e3, MIN = 60e3;
  function rng(seed) {
    return () => {
      seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const iso = (t) => new Date(t).toISOString();
  const B = {
    rand: rng(20261126),
    now: 0, start: 0, end: 0, rows: [], byNode: [], segments: new Map(), ids: [], seq: 1e6,
    nextId: 0, frames: [], applyMs: [], flushMs: [], longTasks: [], recording: false,
    diffTimer: 0,
  };
  const pick = (a) => a[Math.floor(B.rand() * a.length)];
  const duration = () => Math.round(10 * MIN * Math.pow(24, B.rand()));  // 10 min .. 4 h
  const PRIOS = ["CRITICAL", "HIGH", "NORMAL", "NORMAL", "NORMAL", "LOW", "SPOT"];
  const TYPES = ["BATCH", "BATCH", "TRAINING", "SERVICE"];

  function segment(rows, start, end, forceKind) {
    const id = `syn-${B.nextId++}`;
    const mine = B.rand() > 0.15;
    let kind = forceKind;
    if (!kind) {
      if (end != null && end <= B.now) kind = "COMPLETED";
      else if (start <= B.now) kind = "RUNNING";
      else kind = B.rand() < 0.06 ? "RESERVED" : "ESTIMATED";
    }
    const jobType = kind === "RESERVED" || !mine ? null : pick(TYPES);
    const s = {
      __typename: "TimelineSegment", id, rows, start: iso(start), end: end == null ? null : iso(end), kind,
      source: kind === "COMPLETED" ? "actual" : kind === "RESERVED" ? "reservation" : pick(["estimate", "history", "default"]),
      jobId: mine && kind !== "RESERVED" ? `job-${id}` : null,
      name: mine ? (kind === "RESERVED" ? `reservation ${id}` : `train-${pick(["llama", "mistral", "qwen", "bert", "vit"])}-${B.nextId}`) : "another tenant",
      status: kind === "COMPLETED" ? "COMPLETED" : kind === "RUNNING" ? "RUNNING" : kind === "ESTIMATED" ? "QUEUED" : null,
      priority: mine ? pick(PRIOS) : null, mine,
      earliestStart: null, latestStart: null, jobType,
    };
    if (kind === "ESTIMATED" && mine && B.rand() < 0.8) {
      s.earliestStart = iso(start - Math.round(B.rand() * 30 * MIN));
      s.latestStart = B.rand() < 0.2 ? null : iso(start + Math.round((10 + B.rand() * 50) * MIN));
    }
    return s;
  }

  B.makeSnapshot = (nodes, gpus) => {
    B.now = Date.now();
    B.start = B.now - 12 * HOUR;
    B.end = B.now + 12 * HOUR;
    B.rows = []; B.byNode = []; B.segments = new Map(); B.nextId = 0;
    for (let n = 0; n < nodes; n++) {
      const node = `gpu-node-${String(n).padStart(3, "0")}`;
      const gpuType = n % 5 === 4 ? "nvidia-h100-80gb" : "nvidia-a100-80gb";
      const ids = [];
      for (let g = 0; g < gpus; g++) {
        const id = `${node}/${g}`;
        B.rows.push({ __typename: "TimelineRow", id, node, gpuIndex: g, gpuType });
        ids.push(id);
      }
      B.byNode.push(ids);
      const cursor = ids.map(() => B.start - B.rand() * 3 * HOUR);
      for (;;) {
        const order = ids.map((_, i) => i).sort((a, b) => cursor[a] - cursor[b]);
        if (cursor[order[0]] >= B.end) break;
        const width = Math.min(gpus, pick([1, 1, 1, 2, 2, 4, 8]));
        const chosen = order.slice(0, width);
        const start = Math.max(...chosen.map((i) => cursor[i])) + Math.round(B.rand() * 15 * MIN);
        const open = start > B.now - 6 * HOUR && start < B.now && B.rand() < 0.03;
        const end = open ? null : start + duration();
        const s = segment(chosen.map((i) => ids[i]), start, end);
        if (open) s.jobType = s.mine ? "SERVICE" : null;
        B.segments.set(s.id, s);
        for (const i of chosen) cursor[i] = end == null ? B.end + 1 : end;
      }
    }
    B.rows.push({ __typename: "TimelineRow", id: "cpu", node: null, gpuIndex: null, gpuType: null });
    for (let t = B.start; t < B.end; t += 45 * MIN) {
      const s = segment(["cpu"], t, t + duration());
      B.segments.set(s.id, s);
    }
    B.ids = [...B.segments.keys()];
    let segmentRows = 0;
    for (const s of B.segments.values()) segmentRows += s.rows.length;
    return { segments: B.segments.size, segmentRows, rows: B.rows.length };
  };

  function queue() {
    const out = [];
    for (let i = 0; i < 50; i++) {
      const start = B.now + (i + 1) * 7 * MIN;
      const mine = B.rand() > 0.15;
      out.push({
        __typename: "QueueEntry", position: i + 1, jobId: mine ? `queued-${i}` : null, name: mine ? `queued-job-${i}` : "another tenant",
        estimatedStart: iso(start), reason: `needs ${pick([1, 2, 4, 8])} x A100 in cq; ${i} ahead`,
        warnings: i % 9 === 0 ? ["exceeds the largest node's free GPUs"] : [], priority: pick(PRIOS),
        gpuType: "nvidia-a100-80gb", gpuCount: pick([1, 2, 4, 8]), podCount: 1, mine, jobType: mine ? pick(TYPES) : null,
        earliestStart: iso(start - 10 * MIN), latestStart: B.rand() < 0.2 ? null : iso(start + 30 * MIN),
      });
    }
    return out;
  }

  B.snapshotMessage = () => ({
    __typename: "Schedule", sequence: ++B.seq, reason: "subscribed", computedAt: iso(B.now),
    start: iso(B.start), end: iso(B.end), rows: B.rows, segments: [...B.segments.values()], queue: queue(),
  });

  B.diffMessage = (n) => {
    const added = [], moved = [], removed = [];
    const touched = new Set();
    for (let k = 0; k < n; k++) {
      const r = B.rand();
      if (r < 0.5 && B.ids.length) {
        const id = pick(B.ids);
        const s = B.segments.get(id);
        if (!s || touched.has(id)) continue;
        touched.add(id);
        const shift = Math.round((B.rand() * 40 - 20) * MIN);
        const m = { ...s, start: iso(Date.parse(s.start) + shift), end: s.end == null ? null : iso(Date.parse(s.end) + shift) };
        if (m.earliestStart) m.earliestStart = iso(Date.parse(m.earliestStart) + shift);
        if (m.latestStart) m.latestStart = iso(Date.parse(m.latestStart) + shift);
        B.segments.set(id, m);
        moved.push(m);
      } else if (r < 0.75) {
        const node = pick(B.byNode);
        const width = pick([1, 1, 2, 4]);
        const first = Math.floor(B.rand() * (node.length - width + 1));
        const start = B.now + B.rand() * 11 * HOUR;
        const s = segment(node.slice(first, first + width), start, start + duration(), "ESTIMATED");
        B.segments.set(s.id, s);
        B.ids.push(s.id);
        added.push(s);
      } else if (B.ids.length) {
        const at = Math.floor(B.rand() * B.ids.length);
        const id = B.ids[at];
        if (touched.has(id)) continue;
        B.ids[at] = B.ids[B.ids.length - 1];
        B.ids.pop();
        B.segments.delete(id);
        removed.push(id);
      }
    }
    return {
      __typename: "ScheduleDiff", sequence: ++B.seq, computedAt: iso(Date.now()), added, moved, removed,
      queueUpdate: B.seq % 5 === 0 ? queue() : null,
    };
  };

  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

  B.applySnapshot = async () => {
    const message = B.snapshotMessage();
    const hooks = window.budSchedule;
    const before = hooks.renderedAt;
    const t0 = performance.now();
    hooks.applyMessage(message);
    const applyMs = performance.now() - t0;
    for (;;) {
      await nextFrame();
      if (hooks.renderedAt > t0 && hooks.renderedAt !== before && hooks.itemCount > 0) break;
      if (performance.now() - t0 > 60e3) throw new Error("the snapshot did not render in 60 s");
    }
    const renderedMs = hooks.renderedAt - t0;
    await nextFrame();
    return { applyMs, flushMs: hooks.lastFlushMs, renderedMs, firstFrameMs: performance.now() - t0,
             segments: hooks.segmentCount, items: hooks.itemCount };
  };

  B.startRecording = () => {
    B.frames = []; B.applyMs = []; B.flushMs = []; B.longTasks = [];
    B.recording = true;
    let last = performance.now();
    let flushSeen = window.budSchedule.lastFlushMs;
    const loop = (t) => {
      if (!B.recording) return;
      B.frames.push(t - last);
      last = t;
      const f = window.budSchedule.lastFlushMs;
      if (f !== flushSeen) { B.flushMs.push(f); flushSeen = f; }
      requestAnimationFrame(loop);
    };
    requestAnimationFrame((t) => { last = t; requestAnimationFrame(loop); });
    if (!B.observer && "PerformanceObserver" in window) {
      try {
        B.observer = new PerformanceObserver((list) => {
          if (B.recording) for (const e of list.getEntries()) B.longTasks.push(e.duration);
        });
        B.observer.observe({ type: "longtask", buffered: false });
      } catch (e) { B.observer = null; }
    }
  };

  B.stopRecording = () => {
    B.recording = false;
    return { frames: B.frames, applyMs: B.applyMs, flushMs: B.flushMs, longTasks: B.longTasks };
  };

  B.startDiffs = (rate, minOps, maxOps) => {
    B.stopDiffs();
    B.diffTimer = setInterval(() => {
      const message = B.diffMessage(minOps + Math.floor(B.rand() * (maxOps - minOps + 1)));
      const t0 = performance.now();
      window.budSchedule.applyMessage(message);
      if (B.recording) B.applyMs.push(performance.now() - t0);
    }, 1000 / rate);
  };
  B.stopDiffs = () => { if (B.diffTimer) clearInterval(B.diffTimer); B.diffTimer = 0; };

  window.__bench = B;
  return true;
}
