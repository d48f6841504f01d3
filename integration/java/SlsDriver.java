// A Scheduler Load Simulator style driver of ours around Hadoop 3.3.4's real ResourceManager
// and CapacityScheduler, for running SLS inputs side by side with `spindle sim`.
//
//   java SlsDriver TRACE NODES OUT_DIR [--nm-heartbeat-ms 1000] [--am-heartbeat-ms 1000]
//                  [--threads 8] [--timeout-s 3600]
//
// The approach is SLS's (hadoop-tools/hadoop-sls): one JVM holds the ResourceManager (here
// MockRM from the ResourceManager's test jar: the real RM services, schedulers and state
// machines, without RPC servers or a web app) and, on a thread pool, simulated NodeManagers and
// ApplicationMasters that call the RM's ResourceTrackerService and ApplicationMasterService in
// process, in real time:
//
// * every node of the node file registers, then heartbeats every --nm-heartbeat-ms (each at its
//   own random phase), reporting its running containers and the ones that finished since the
//   last heartbeat (exit 0); the containers the RM asks it to clean up end as killed;
// * every job of the trace is submitted (ClientRMService) at its job.start.ms; when the
//   scheduler has placed its AM container, the RM's AM launcher (replaced, as SLS replaces it)
//   starts the container on its simulated node and reports the attempt launched; the AM
//   registers and calls allocate every --am-heartbeat-ms: MapReduce as SLS's MRAMSimulator,
//   maps first (host, rack and ANY rows per host the trace names), the reduces once every map
//   is done; each container it gets runs its task for the task's duration on its node; spare
//   containers are released; when every task is done it unregisters and its AM container ends.
//
// Node names resolve to 127.0.0.1 through a hosts file the driver writes (jdk.net.hosts.file):
// the RM looks every node's name up on each heartbeat, and DNS knows none of them.
//
// The capacity-scheduler.xml comes from the class path (the launcher puts the file given to it
// there). Racks come from the node file through a TableMapping file, as SLS generates one.
//
// Output in OUT_DIR: summary.json (the terms `spindle sim --json` uses where they apply, plus
// allocate latency), jobruntime.csv (per job: submit, AM start, end, as SLS's), and
// timeseries.csv (allocated memory per leaf queue, once a second). Allocate latency is measured
// around ApplicationMasterService.allocate (the RM side of the AM's call: the scheduler's
// allocate, which SLS times as scheduler.allocate.timecost, plus the service's checks).
//
// Only the `mapreduce` AM type of SLS traces is simulated; other types are an error.

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.TableMapping;
import org.apache.hadoop.yarn.api.ApplicationMasterProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.GetNewApplicationRequest;
import org.apache.hadoop.yarn.api.protocolrecords.SubmitApplicationRequest;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatResponse;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRM;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.AMLauncherEvent;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.AMLauncherEventType;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.ApplicationMasterLauncher;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEvent;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptImpl;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.util.resource.Resources;

public class SlsDriver {
    static final String ANY = ResourceRequest.ANY;

    // ---- inputs -------------------------------------------------------------------------

    static final class Task {
        final String host; // null: anywhere
        final String rack;
        final long durationMs;
        final int priority;
        final boolean reduce;
        final int memoryMb;
        final int vcores;

        Task(String host, String rack, long durationMs, int priority, boolean reduce, int memoryMb,
                int vcores) {
            this.host = host;
            this.rack = rack;
            this.durationMs = durationMs;
            this.priority = priority;
            this.reduce = reduce;
            this.memoryMb = memoryMb;
            this.vcores = vcores;
        }
    }

    static final class Job {
        String id;
        String queue;
        String user;
        long startMs;
        int amMemoryMb = 1024;
        int amVcores = 1;
        final List<Task> maps = new ArrayList<>();
        final List<Task> reduces = new ArrayList<>();
    }

    static final class NodeDef {
        final String host;
        final String rack;
        final int memoryMb;
        final int vcores;

        NodeDef(String host, String rack, int memoryMb, int vcores) {
            this.host = host;
            this.rack = rack;
            this.memoryMb = memoryMb;
            this.vcores = vcores;
        }
    }

    static List<Map<String, Object>> objects(File f) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        ObjectMapper mapper = new ObjectMapper();
        try (MappingIterator<Map<String, Object>> it =
                mapper.readerFor(Map.class).readValues(f)) {
            while (it.hasNext()) {
                out.add(it.next());
            }
        }
        return out;
    }

    static Long num(Map<String, Object> m, String key, String ctx) {
        Object v = m.get(key);
        if (v == null) {
            return null;
        }
        if (v instanceof Number) {
            return ((Number) v).longValue();
        }
        try {
            return Long.parseLong(v.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(ctx + ": key '" + key + "': '" + v
                    + "' is not an integer");
        }
    }

    static String str(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v == null ? null : v.toString();
    }

    static String[] splitHost(String s) {
        s = s.trim();
        int i = s.lastIndexOf('/');
        if (i < 0) {
            return new String[] {"/default-rack", s};
        }
        String rack = s.substring(0, i);
        return new String[] {rack.isEmpty() ? "/default-rack" : rack, s.substring(i + 1)};
    }

    static List<Job> loadTrace(File f) throws IOException {
        List<Job> jobs = new ArrayList<>();
        int n = 0;
        for (Map<String, Object> o : objects(f)) {
            n++;
            String ctx = f + ": job object #" + n;
            if (o.containsKey("num.nodes")) {
                throw new IllegalArgumentException(ctx
                        + ": num.nodes objects are not supported by this driver; give a node file");
            }
            String type = str(o, "am.type");
            if (type != null && !type.equals("mapreduce")) {
                throw new IllegalArgumentException(ctx + ": am.type '" + type
                        + "' is not supported (only mapreduce)");
            }
            String queue = str(o, "job.queue.name");
            if (queue == null) {
                throw new IllegalArgumentException(ctx + ": key 'job.queue.name': missing");
            }
            Long count = num(o, "job.count", ctx);
            long instances = count == null ? 1 : count;
            for (long k = 0; k < instances; k++) {
                Job j = new Job();
                String id = str(o, "job.id");
                if (id == null) {
                    id = "job_" + n;
                }
                j.id = instances > 1 ? id + "_" + k : id;
                j.queue = queue;
                j.user = str(o, "job.user") == null ? "default" : str(o, "job.user");
                Long start = num(o, "job.start.ms", ctx);
                j.startMs = start == null ? 0 : start;
                Long amMem = num(o, "am.memory-mb", ctx);
                Long amV = num(o, "am.vcores", ctx);
                if (amMem != null) {
                    j.amMemoryMb = amMem.intValue();
                }
                if (amV != null) {
                    j.amVcores = amV.intValue();
                }
                Object tasks = o.get("job.tasks");
                if (!(tasks instanceof List)) {
                    throw new IllegalArgumentException(ctx + ": key 'job.tasks': missing");
                }
                int ti = 0;
                for (Object to : (List<?>) tasks) {
                    ti++;
                    if (!(to instanceof Map)) {
                        throw new IllegalArgumentException(ctx + ": task " + ti
                                + " is not an object");
                    }
                    @SuppressWarnings("unchecked")
                    Map<String, Object> t = (Map<String, Object>) to;
                    String tctx = ctx + ", task " + ti;
                    Long c = num(t, "count", tctx);
                    long tcount = c == null ? 1 : c;
                    Long dur = num(t, "container.duration.ms", tctx);
                    if (dur == null) {
                        dur = num(t, "duration.ms", tctx);
                    }
                    if (dur == null) {
                        Long s = num(t, "container.start.ms", tctx);
                        Long e = num(t, "container.end.ms", tctx);
                        if (s == null || e == null) {
                            throw new IllegalArgumentException(tctx + ": no duration");
                        }
                        dur = e - s;
                    }
                    if (dur <= 0) {
                        throw new IllegalArgumentException(tctx + ": duration must be positive");
                    }
                    Long prio = num(t, "container.priority", tctx);
                    Long mem = num(t, "container.memory-mb", tctx);
                    Long vc = num(t, "container.vcores", tctx);
                    String ctype = str(t, "container.type");
                    boolean reduce = "reduce".equals(ctype);
                    String hostSpec = str(t, "container.host");
                    String host = null;
                    String rack = null;
                    if (hostSpec != null && !hostSpec.trim().isEmpty()) {
                        String[] rh = splitHost(hostSpec);
                        rack = rh[0];
                        host = rh[1];
                    }
                    for (long q = 0; q < tcount; q++) {
                        Task task = new Task(host, rack, dur, prio == null ? 20 : prio.intValue(),
                                reduce, mem == null ? 1024 : mem.intValue(),
                                vc == null ? 1 : vc.intValue());
                        (reduce ? j.reduces : j.maps).add(task);
                    }
                }
                jobs.add(j);
            }
        }
        return jobs;
    }

    static List<NodeDef> loadNodes(File f) throws IOException {
        List<NodeDef> nodes = new ArrayList<>();
        for (Map<String, Object> o : objects(f)) {
            String rack = str(o, "rack");
            if (rack == null) {
                throw new IllegalArgumentException(f + ": a rack object has no 'rack'");
            }
            rack = "/" + rack.replaceAll("^/+", "");
            Object list = o.get("nodes");
            if (!(list instanceof List)) {
                throw new IllegalArgumentException(f + ": rack " + rack + " has no 'nodes' list");
            }
            for (Object no : (List<?>) list) {
                if (!(no instanceof Map)) {
                    throw new IllegalArgumentException(f + ": rack " + rack
                            + ": a node is not an object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) no;
                String host = str(m, "node");
                if (host == null) {
                    throw new IllegalArgumentException(f + ": rack " + rack + ": a node has no 'node'");
                }
                Long mem = num(m, "memory-mb", f.toString());
                Long vc = num(m, "vcores", f.toString());
                nodes.add(new NodeDef(host, rack, mem == null ? 10240 : mem.intValue(),
                        vc == null ? 10 : vc.intValue()));
            }
        }
        return nodes;
    }

    // ---- the run ------------------------------------------------------------------------

    final long nmHeartbeatMs;
    final long amHeartbeatMs;
    final ScheduledThreadPoolExecutor pool;
    MockRM rm;
    long baseline;
    final Map<String, SimNode> nodesByHost = new HashMap<>();
    final Map<ApplicationId, SimAm> amsByApp = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<Long> allocateNanos = new ConcurrentLinkedQueue<>();
    final AtomicLong allocations = new AtomicLong();
    final AtomicLong spareReleased = new AtomicLong();
    final AtomicLong nodeHeartbeats = new AtomicLong();
    final AtomicLong tasksCompleted = new AtomicLong();
    final AtomicLong tasksLost = new AtomicLong();
    final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch remaining;

    SlsDriver(long nmHeartbeatMs, long amHeartbeatMs, int threads) {
        this.nmHeartbeatMs = nmHeartbeatMs;
        this.amHeartbeatMs = amHeartbeatMs;
        this.pool = new ScheduledThreadPoolExecutor(threads);
    }

    long now() {
        return System.currentTimeMillis() - baseline;
    }

    void fail(String what, Throwable e) {
        String msg = what + ": " + e;
        errors.add(msg);
        System.err.println("sls-driver: " + msg);
    }

    /** A NodeManager: registered once, then heartbeats with its containers' statuses. */
    final class SimNode implements Runnable {
        final NodeDef def;
        final MockNM nm;
        // container -> end time (ms since baseline); Long.MAX_VALUE: until told (AM containers)
        final Map<ContainerId, Long> running = new LinkedHashMap<>();
        final List<ContainerStatus> finished = new ArrayList<>();

        SimNode(NodeDef def) {
            this.def = def;
            this.nm = new MockNM(def.host + ":1", Resources.createResource(def.memoryMb, def.vcores),
                    rm.getResourceTrackerService());
        }

        synchronized void launch(ContainerId id, long endMs) {
            running.put(id, endMs);
        }

        synchronized void finishNow(ContainerId id) {
            if (running.remove(id) != null) {
                finished.add(ContainerStatus.newInstance(id, ContainerState.COMPLETE, "", 0));
            }
        }

        @Override
        public void run() {
            try {
                List<ContainerStatus> statuses = new ArrayList<>();
                synchronized (this) {
                    long t = now();
                    Iterator<Map.Entry<ContainerId, Long>> it = running.entrySet().iterator();
                    while (it.hasNext()) {
                        Map.Entry<ContainerId, Long> e = it.next();
                        if (e.getValue() <= t) {
                            it.remove();
                            finished.add(ContainerStatus.newInstance(e.getKey(),
                                    ContainerState.COMPLETE, "", 0));
                        } else {
                            statuses.add(ContainerStatus.newInstance(e.getKey(),
                                    ContainerState.RUNNING, "", -1000));
                        }
                    }
                    statuses.addAll(finished);
                    finished.clear();
                }
                NodeHeartbeatResponse r = nm.nodeHeartbeat(statuses, true);
                nodeHeartbeats.incrementAndGet();
                if (r.getContainersToCleanup() != null) {
                    synchronized (this) {
                        for (ContainerId id : r.getContainersToCleanup()) {
                            if (running.remove(id) != null) {
                                finished.add(ContainerStatus.newInstance(id,
                                        ContainerState.COMPLETE, "killed by the RM", -100));
                            }
                        }
                    }
                }
            } catch (Throwable e) {
                fail("heartbeat of " + def.host, e);
            }
        }
    }

    /** One ApplicationMaster, MapReduce as SLS's MRAMSimulator. */
    final class SimAm implements Runnable {
        final Job job;
        ApplicationId appId;
        volatile ApplicationAttemptId attemptId;
        volatile Container amContainer;
        MockAM am;
        ScheduledFuture<?> future;
        long submittedMs = -1;
        long registeredMs = -1;
        long finishedMs = -1;
        boolean registered;
        boolean done;
        boolean reducesAsked;
        final ArrayDeque<Task> waiting = new ArrayDeque<>();
        final Map<ContainerId, Task> runningTasks = new HashMap<>();
        List<ResourceRequest> ask = new ArrayList<>();
        final List<ContainerId> release = new ArrayList<>();
        int mapsLeft;
        int reducesLeft;

        SimAm(Job job) {
            this.job = job;
            this.mapsLeft = job.maps.size();
            this.reducesLeft = job.reduces.size();
        }

        void submit() {
            try {
                appId = rm.getClientRMService()
                        .getNewApplication(GetNewApplicationRequest.newInstance())
                        .getApplicationId();
                amsByApp.put(appId, this);
                ApplicationSubmissionContext ctx = ApplicationSubmissionContext.newInstance(appId,
                        job.id, job.queue, Priority.newInstance(0),
                        ContainerLaunchContext.newInstance(null, null, null, null, null, null),
                        false, false, 2, Resources.createResource(job.amMemoryMb, job.amVcores),
                        "MAPREDUCE");
                submittedMs = now();
                rm.getClientRMService()
                        .submitApplication(SubmitApplicationRequest.newInstance(ctx));
                future = pool.scheduleWithFixedDelay(this, amHeartbeatMs, amHeartbeatMs,
                        TimeUnit.MILLISECONDS);
            } catch (Throwable e) {
                fail("submission of " + job.id, e);
                remaining.countDown();
            }
        }

        /** Asks for every task in `tasks`: host, rack and ANY rows, per priority and size. */
        List<ResourceRequest> asks(List<Task> tasks) {
            Map<String, ResourceRequest> rows = new TreeMap<>();
            for (Task t : tasks) {
                Resource res = Resources.createResource(t.memoryMb, t.vcores);
                String key = t.priority + "/" + t.memoryMb + "/" + t.vcores + "/";
                List<String> names = new ArrayList<>();
                if (t.host != null) {
                    names.add(t.host);
                    names.add(t.rack);
                }
                names.add(ANY);
                for (String name : names) {
                    ResourceRequest rr = rows.get(key + name);
                    if (rr == null) {
                        rr = ResourceRequest.newInstance(Priority.newInstance(t.priority), name,
                                res, 0);
                        // The RM keys its table by priority and allocation request id, not by
                        // size: each size gets its own id, or the sizes overwrite each other.
                        rr.setAllocationRequestId(sizeId(t));
                        rows.put(key + name, rr);
                    }
                    rr.setNumContainers(rr.getNumContainers() + 1);
                }
            }
            return new ArrayList<>(rows.values());
        }

        @Override
        public void run() {
            try {
                step();
            } catch (Throwable e) {
                fail("AM of " + job.id, e);
                if (future != null) {
                    future.cancel(false);
                }
                remaining.countDown();
            }
        }

        void step() throws Exception {
            if (done || attemptId == null) {
                return; // the AM container is not placed yet
            }
            if (!registered) {
                RMAppAttempt attempt = rm.getRMContext().getRMApps().get(appId)
                        .getRMAppAttempt(attemptId);
                if (attempt == null || attempt.getAppAttemptState() != RMAppAttemptState.LAUNCHED) {
                    return;
                }
                am = new MockAM(rm.getRMContext(), timedAmService(), attemptId);
                am.registerAppAttempt(false);
                registered = true;
                registeredMs = now();
                waiting.addAll(job.maps);
                ask = asks(job.maps);
            }
            if (mapsLeft == 0 && !reducesAsked) {
                reducesAsked = true;
                waiting.addAll(job.reduces);
                ask = asks(job.reduces);
            }
            List<ContainerId> rel = new ArrayList<>(release);
            release.clear();
            AllocateResponse r = am.allocate(ask, rel);
            ask = new ArrayList<>();
            long t = now();
            for (Container c : r.getAllocatedContainers()) {
                allocations.incrementAndGet();
                Task task = null;
                for (Iterator<Task> it = waiting.iterator(); it.hasNext(); ) {
                    Task w = it.next();
                    if (sizeId(w) == c.getAllocationRequestId()) {
                        task = w;
                        it.remove();
                        break;
                    }
                }
                if (task == null) {
                    release.add(c.getId());
                    spareReleased.incrementAndGet();
                    continue;
                }
                runningTasks.put(c.getId(), task);
                SimNode node = nodesByHost.get(c.getNodeId().getHost());
                node.launch(c.getId(), t + task.durationMs);
            }
            List<Task> again = new ArrayList<>();
            for (ContainerStatus s : r.getCompletedContainersStatuses()) {
                Task task = runningTasks.remove(s.getContainerId());
                if (task == null) {
                    continue;
                }
                if (s.getExitStatus() == 0) {
                    tasksCompleted.incrementAndGet();
                    if (task.reduce) {
                        reducesLeft--;
                    } else {
                        mapsLeft--;
                    }
                } else {
                    tasksLost.incrementAndGet();
                    waiting.add(task);
                    again.add(task);
                }
            }
            if (!again.isEmpty()) {
                // Counts are absolute: ask again for every task still waiting, not only these.
                ask = asks(new ArrayList<>(waiting));
            }
            if (mapsLeft == 0 && reducesLeft == 0) {
                am.unregisterAppAttempt(false);
                done = true;
                finishedMs = now();
                nodesByHost.get(amContainer.getNodeId().getHost()).finishNow(amContainer.getId());
                future.cancel(false);
                remaining.countDown();
            }
        }
    }

    /** The allocation request id of a task's size. */
    static long sizeId(Task t) {
        return ((long) t.memoryMb << 20) | t.vcores;
    }

    /** ApplicationMasterService, with each allocate call timed. */
    ApplicationMasterProtocol timedAmService() {
        final ApplicationMasterProtocol real = rm.getApplicationMasterService();
        InvocationHandler h = (proxy, method, args) -> {
            boolean timed = method.getName().equals("allocate");
            long t0 = System.nanoTime();
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                if (timed) {
                    allocateNanos.add(System.nanoTime() - t0);
                }
            }
        };
        return (ApplicationMasterProtocol) Proxy.newProxyInstance(
                ApplicationMasterProtocol.class.getClassLoader(),
                new Class<?>[] {ApplicationMasterProtocol.class}, h);
    }

    /** The RM, with SLS's AM launcher: the AM container runs on its simulated node. */
    MockRM startRm(Configuration conf) {
        MockRM m = new MockRM(conf) {
            @Override
            protected ApplicationMasterLauncher createAMLauncher() {
                return new ApplicationMasterLauncher(getRMContext()) {
                    @Override
                    protected void serviceStart() {}

                    @Override
                    protected void serviceStop() {}

                    @Override
                    public void handle(AMLauncherEvent event) {
                        if (event.getType() != AMLauncherEventType.LAUNCH) {
                            return;
                        }
                        RMAppAttempt attempt = event.getAppAttempt();
                        SimAm am = amsByApp.get(attempt.getAppAttemptId().getApplicationId());
                        Container c = attempt.getMasterContainer();
                        if (am == null || c == null) {
                            return;
                        }
                        allocations.incrementAndGet();
                        // What Hadoop's AM launcher does before it starts the container.
                        ((RMAppAttemptImpl) attempt).setAMRMToken(getRMContext()
                                .getAMRMTokenSecretManager()
                                .createAndGetAMRMToken(attempt.getAppAttemptId()));
                        nodesByHost.get(c.getNodeId().getHost()).launch(c.getId(), Long.MAX_VALUE);
                        am.amContainer = c;
                        am.attemptId = attempt.getAppAttemptId();
                        getRMContext().getDispatcher().getEventHandler().handle(
                                new RMAppAttemptEvent(attempt.getAppAttemptId(),
                                        RMAppAttemptEventType.LAUNCHED));
                    }
                };
            }
        };
        // MockRM turns the root logger to DEBUG; the launcher's log4j configuration decides.
        org.apache.log4j.LogManager.getRootLogger().setLevel(org.apache.log4j.Level.toLevel(
                System.getProperty("sls.driver.loglevel", "WARN")));
        m.start();
        return m;
    }

    static double percentile(List<Double> sorted, double p) {
        if (sorted.isEmpty()) {
            return 0.0;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    static String jsonString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String fmt(double d) {
        return String.format(Locale.ROOT, "%.6f", d);
    }

    public static void main(String[] argv) throws Exception {
        List<String> pos = new ArrayList<>();
        long nmHb = 1000;
        long amHb = 1000;
        int threads = 8;
        long timeoutS = 3600;
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (a.startsWith("--")) {
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                long v = Long.parseLong(argv[++i]);
                switch (a) {
                    case "--nm-heartbeat-ms": nmHb = v; break;
                    case "--am-heartbeat-ms": amHb = v; break;
                    case "--threads": threads = (int) v; break;
                    case "--timeout-s": timeoutS = v; break;
                    default: throw new IllegalArgumentException("unknown option " + a);
                }
            } else {
                pos.add(a);
            }
        }
        if (pos.size() != 3) {
            System.err.println("usage: SlsDriver TRACE NODES OUT_DIR [--nm-heartbeat-ms N]"
                    + " [--am-heartbeat-ms N] [--threads N] [--timeout-s N]");
            System.exit(2);
        }
        File out = new File(pos.get(2));
        if (!out.isDirectory() && !out.mkdirs()) {
            throw new IOException("cannot create " + out);
        }
        List<Job> jobs = loadTrace(new File(pos.get(0)));
        List<NodeDef> nodes = loadNodes(new File(pos.get(1)));
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("the node file lists no nodes");
        }
        // The RM resolves every node's name (NodesListManager, on each heartbeat); simulated
        // names would go to DNS and wait for it to fail. A hosts file of ours answers at once:
        // set before the JVM's name service starts (nothing has resolved a name yet).
        File hosts = new File(out, "hosts");
        try (PrintWriter w = new PrintWriter(hosts, "UTF-8")) {
            w.println("127.0.0.1 localhost");
            File name = new File("/proc/sys/kernel/hostname");
            String self = name.isFile() ? new String(Files.readAllBytes(name.toPath()),
                    StandardCharsets.UTF_8).trim() : "";
            if (!self.isEmpty()) {
                w.println("127.0.0.1 " + self);
            }
            for (NodeDef n : nodes) {
                w.println("127.0.0.1 " + n.host);
            }
        } catch (IOException e) {
            throw new IOException("cannot write " + hosts + ": " + e, e);
        }
        System.setProperty("jdk.net.hosts.file", hosts.getAbsolutePath());
        jobs.sort((a, b) -> Long.compare(a.startMs, b.startMs));
        int code;
        try {
            code = new SlsDriver(nmHb, amHb, threads).run(jobs, nodes, out, timeoutS);
        } catch (Throwable e) {
            e.printStackTrace();
            code = 1;
        }
        // The RM leaves timer threads behind.
        System.exit(code);
    }

    int run(List<Job> jobs, List<NodeDef> nodes, File out, long timeoutS) throws Exception {
        // Racks, as SLS gives them: a table from host to rack.
        File table = new File(out, "rack-table.txt");
        try (PrintWriter w = new PrintWriter(table, "UTF-8")) {
            for (NodeDef n : nodes) {
                w.println(n.host + " " + n.rack);
            }
        }
        int maxMem = 0;
        int maxV = 0;
        for (NodeDef n : nodes) {
            maxMem = Math.max(maxMem, n.memoryMb);
            maxV = Math.max(maxV, n.vcores);
        }
        Configuration conf = new YarnConfiguration();
        conf.set(YarnConfiguration.RM_SCHEDULER, CapacityScheduler.class.getName());
        conf.setClass("net.topology.node.switch.mapping.impl", TableMapping.class,
                org.apache.hadoop.net.DNSToSwitchMapping.class);
        conf.set("net.topology.table.file.name", table.getAbsolutePath());
        // As SLS and `spindle sim` on SLS inputs: the largest node is the largest ask.
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, maxMem);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, maxV);
        conf.setLong(YarnConfiguration.RM_NM_EXPIRY_INTERVAL_MS, 600_000);
        conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, false);
        // Simulated hosts do not resolve: token services by name, as SLS sets.
        org.apache.hadoop.security.SecurityUtil.setTokenServiceUseIp(false);
        rm = startRm(conf);
        CapacityScheduler cs = (CapacityScheduler) rm.getResourceScheduler();

        long wallStart = System.nanoTime();
        baseline = System.currentTimeMillis();
        Random rnd = new Random(1);
        for (NodeDef d : nodes) {
            SimNode n = new SimNode(d);
            n.nm.registerNode();
            nodesByHost.put(d.host, n);
        }
        for (SimNode n : nodesByHost.values()) {
            pool.scheduleAtFixedRate(n, (long) (rnd.nextDouble() * nmHeartbeatMs), nmHeartbeatMs,
                    TimeUnit.MILLISECONDS);
        }
        // The jobs' clock starts once every node is registered, as in SLS.
        baseline = System.currentTimeMillis();
        remaining = new CountDownLatch(jobs.size());
        List<SimAm> ams = new ArrayList<>();
        for (Job j : jobs) {
            SimAm am = new SimAm(j);
            ams.add(am);
            pool.schedule(am::submit, j.startMs, TimeUnit.MILLISECONDS);
        }
        // Queue usage, once a second.
        LinkedHashSet<String> queueNames = new LinkedHashSet<>();
        for (Job j : jobs) {
            queueNames.add(j.queue);
        }
        List<String> leaves = new ArrayList<>(queueNames);
        List<long[]> samples = Collections.synchronizedList(new ArrayList<>());
        ScheduledFuture<?> sampler = pool.scheduleAtFixedRate(() -> {
            long[] row = new long[leaves.size() + 1];
            row[0] = now();
            for (int i = 0; i < leaves.size(); i++) {
                CSQueue q = cs.getQueue(leaves.get(i));
                if (q != null) {
                    QueueMetrics m = q.getMetrics();
                    row[i + 1] = m.getAllocatedMB();
                }
            }
            samples.add(row);
        }, 0, 1000, TimeUnit.MILLISECONDS);

        // Progress on stderr every 10 s; the run ends when every job is done or at the timeout.
        boolean allDone = false;
        long until = System.currentTimeMillis() + timeoutS * 1000;
        while (!allDone && System.currentTimeMillis() < until) {
            allDone = remaining.await(10, TimeUnit.SECONDS);
            int registered = 0;
            int finished = 0;
            for (SimAm am : ams) {
                registered += am.registeredMs >= 0 ? 1 : 0;
                finished += am.finishedMs >= 0 ? 1 : 0;
            }
            System.err.printf(Locale.ROOT, "sls-driver: t=%.0f s: %d jobs, %d AMs registered,"
                    + " %d finished, %d allocations%n", now() / 1000.0, ams.size(), registered,
                    finished, allocations.get());
        }
        // The applications finish once their AM containers are reported complete.
        long deadline = System.currentTimeMillis() + 30_000;
        int completed = 0;
        while (System.currentTimeMillis() < deadline) {
            completed = 0;
            for (SimAm am : ams) {
                RMApp app = am.appId == null ? null : rm.getRMContext().getRMApps().get(am.appId);
                if (app != null && app.createApplicationState() == YarnApplicationState.FINISHED
                        && app.getFinalApplicationStatus() == FinalApplicationStatus.SUCCEEDED) {
                    completed++;
                }
            }
            if (completed == ams.size() || !allDone || !errors.isEmpty()) {
                break;
            }
            Thread.sleep(100);
        }
        long simEnd = now();
        double wallS = (System.nanoTime() - wallStart) / 1e9;
        sampler.cancel(false);
        pool.shutdownNow();
        pool.awaitTermination(10, TimeUnit.SECONDS);

        // Turnarounds (submission to the AM's end), makespan, queue shares.
        List<Double> turnarounds = new ArrayList<>();
        long firstSubmit = Long.MAX_VALUE;
        long lastFinish = 0;
        for (SimAm am : ams) {
            if (am.finishedMs >= 0) {
                turnarounds.add((am.finishedMs - am.submittedMs) / 1000.0);
                firstSubmit = Math.min(firstSubmit, am.submittedMs);
                lastFinish = Math.max(lastFinish, am.finishedMs);
            }
        }
        Collections.sort(turnarounds);
        double mean = turnarounds.stream().mapToDouble(Double::doubleValue).average().orElse(0.0);
        List<Double> lat = new ArrayList<>();
        for (Long n : allocateNanos) {
            lat.add(n / 1e6);
        }
        Collections.sort(lat);
        double[] shareSum = new double[leaves.size()];
        int shareSamples = 0;
        List<long[]> rows;
        synchronized (samples) {
            rows = new ArrayList<>(samples);
        }
        for (long[] row : rows) {
            long total = 0;
            for (int i = 1; i < row.length; i++) {
                total += row[i];
            }
            if (total <= 0) {
                continue;
            }
            shareSamples++;
            for (int i = 0; i < leaves.size(); i++) {
                shareSum[i] += (double) row[i + 1] / total;
            }
        }

        StringBuilder s = new StringBuilder("{");
        s.append("\"rm\":\"hadoop-3.3.4-capacity\"");
        s.append(",\"wall_time_s\":").append(fmt(wallS));
        s.append(",\"sim_time_s\":").append(fmt(simEnd / 1000.0));
        s.append(",\"nodes\":").append(nodes.size());
        s.append(",\"apps_submitted\":").append(ams.size());
        s.append(",\"apps_completed\":").append(completed);
        s.append(",\"apps_unfinished\":").append(ams.size() - completed);
        s.append(",\"allocations\":").append(allocations.get());
        s.append(",\"spare_containers_released\":").append(spareReleased.get());
        s.append(",\"allocations_per_s\":").append(fmt(wallS > 0 ? allocations.get() / wallS : 0));
        s.append(",\"tasks_completed\":").append(tasksCompleted.get());
        s.append(",\"tasks_lost\":").append(tasksLost.get());
        s.append(",\"node_heartbeats\":").append(nodeHeartbeats.get());
        s.append(",\"turnaround_s_mean\":").append(fmt(mean));
        s.append(",\"turnaround_s_p50\":").append(fmt(percentile(turnarounds, 50)));
        s.append(",\"turnaround_s_p95\":").append(fmt(percentile(turnarounds, 95)));
        s.append(",\"makespan_s\":").append(fmt(lastFinish > firstSubmit
                ? (lastFinish - firstSubmit) / 1000.0 : 0.0));
        s.append(",\"allocate_calls\":").append(lat.size());
        s.append(",\"allocate_ms_p50\":").append(fmt(percentile(lat, 50)));
        s.append(",\"allocate_ms_p99\":").append(fmt(percentile(lat, 99)));
        s.append(",\"allocate_latency_measured_around\":"
                + "\"ApplicationMasterService.allocate\"");
        s.append(",\"queue_share_samples\":").append(shareSamples);
        s.append(",\"queue_mean_share\":{");
        for (int i = 0; i < leaves.size(); i++) {
            if (i > 0) {
                s.append(',');
            }
            s.append(jsonString(leaves.get(i))).append(':')
                    .append(fmt(shareSamples > 0 ? shareSum[i] / shareSamples : 0.0));
        }
        s.append("}");
        s.append(",\"unfinished\":[");
        boolean first = true;
        for (SimAm am : ams) {
            if (am.finishedMs >= 0) {
                continue;
            }
            RMApp app = am.appId == null ? null : rm.getRMContext().getRMApps().get(am.appId);
            RMAppAttempt att = app == null ? null : app.getCurrentAppAttempt();
            s.append(first ? "" : ",").append(jsonString(am.job.id + " " + am.job.queue
                    + ": app " + (app == null ? "none" : app.getState())
                    + ", attempt " + (att == null ? "none" : att.getAppAttemptState())
                    + ", registered " + am.registered + ", maps left " + am.mapsLeft
                    + ", reduces left " + am.reducesLeft + ", waiting " + am.waiting.size()
                    + ", running " + am.runningTasks.size()));
            first = false;
        }
        s.append("]");
        s.append(",\"errors\":[");
        synchronized (errors) {
            for (int i = 0; i < errors.size(); i++) {
                if (i > 0) {
                    s.append(',');
                }
                s.append(jsonString(errors.get(i)));
            }
        }
        s.append("]}\n");
        Files.write(new File(out, "summary.json").toPath(),
                s.toString().getBytes(StandardCharsets.UTF_8));

        try (PrintWriter w = new PrintWriter(new File(out, "jobruntime.csv"), "UTF-8")) {
            w.println("job_id,queue,maps,reduces,submit_ms,am_start_ms,end_ms");
            for (SimAm am : ams) {
                w.println(am.job.id + "," + am.job.queue + "," + am.job.maps.size() + ","
                        + am.job.reduces.size() + "," + am.submittedMs + "," + am.registeredMs
                        + "," + am.finishedMs);
            }
        }
        try (PrintWriter w = new PrintWriter(new File(out, "timeseries.csv"), "UTF-8")) {
            StringBuilder h = new StringBuilder("time_ms");
            for (String l : leaves) {
                h.append(",queue_used_mb:").append(l);
            }
            w.println(h);
            for (long[] row : rows) {
                StringBuilder b = new StringBuilder();
                for (int i = 0; i < row.length; i++) {
                    if (i > 0) {
                        b.append(',');
                    }
                    b.append(row[i]);
                }
                w.println(b);
            }
        }
        System.out.print(s);
        rm.stop();
        if (!allDone) {
            System.err.println("sls-driver: not every job finished within " + timeoutS + " s");
            return 1;
        }
        return errors.isEmpty() ? 0 : 1;
    }
}
