// Calls on the ResourceManager through Hadoop's own YarnClient what the `yarn` CLI cannot
// express: submissions with application ACLs, tags or oversized fields, and a kill with
// a diagnostic message.
//
// Usage:
//   AppClient submit --name NAME [--name-length N] [--queue QUEUE] [--command CMD]
//                    [--view-acl ACL] [--modify-acl ACL] [--tags T1,T2,...]
//                    [--memory-mb MB]
//       Prints the application id once the RM has accepted the submission. With
//       --name-length, the name is NAME followed by 'x' up to N characters.
//   AppClient kill --app ID [--diagnostics-length N]
//       Kills the application with a diagnostic message of N characters.
// Exit status 0 on success; 1 with the exception (class: message) on stderr otherwise.

import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.yarn.api.records.ApplicationAccessType;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

public final class AppClient {
    private AppClient() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("a command is required");
        }
        Map<String, String> opts = parse(args);
        YarnClient client = YarnClient.createYarnClient();
        client.init(new YarnConfiguration());
        client.start();
        try {
            switch (args[0]) {
                case "submit":
                    submit(client, opts);
                    break;
                case "kill":
                    kill(client, opts);
                    break;
                default:
                    usage("unknown command " + args[0]);
            }
        } catch (Exception e) {
            System.err.println(e.getClass().getName() + ": " + e.getMessage());
            System.exit(1);
        } finally {
            client.stop();
        }
    }

    private static void submit(YarnClient client, Map<String, String> opts) throws Exception {
        String name = opts.get("--name");
        if (name == null) {
            usage("--name is required");
        }
        int nameLength = intOption(opts, "--name-length", -1);
        if (nameLength > name.length()) {
            StringBuilder padded = new StringBuilder(nameLength).append(name);
            while (padded.length() < nameLength) {
                padded.append('x');
            }
            name = padded.toString();
        }
        YarnClientApplication app = client.createApplication();
        ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
        ctx.setApplicationName(name);
        ctx.setQueue(opts.getOrDefault("--queue", "default"));
        ctx.setMaxAppAttempts(1);
        ctx.setResource(Resource.newInstance(intOption(opts, "--memory-mb", 256), 1));
        String tags = opts.get("--tags");
        if (tags != null) {
            Set<String> set = new HashSet<>();
            Collections.addAll(set, tags.split(","));
            ctx.setApplicationTags(set);
        }
        ContainerLaunchContext clc = ContainerLaunchContext.newInstance(
                Collections.emptyMap(), Collections.emptyMap(),
                Collections.singletonList(opts.getOrDefault("--command", "sleep 300")),
                null, null, null);
        Map<ApplicationAccessType, String> acls = new EnumMap<>(ApplicationAccessType.class);
        if (opts.containsKey("--view-acl")) {
            acls.put(ApplicationAccessType.VIEW_APP, opts.get("--view-acl"));
        }
        if (opts.containsKey("--modify-acl")) {
            acls.put(ApplicationAccessType.MODIFY_APP, opts.get("--modify-acl"));
        }
        if (!acls.isEmpty()) {
            clc.setApplicationACLs(acls);
        }
        ctx.setAMContainerSpec(clc);
        ApplicationId id = client.submitApplication(ctx);
        System.out.println(id);
    }

    private static void kill(YarnClient client, Map<String, String> opts) throws Exception {
        String app = opts.get("--app");
        if (app == null) {
            usage("--app is required");
        }
        int length = intOption(opts, "--diagnostics-length", 0);
        StringBuilder diagnostics = new StringBuilder(length);
        while (diagnostics.length() < length) {
            diagnostics.append('d');
        }
        client.killApplication(ApplicationId.fromString(app), diagnostics.toString());
        System.out.println("killed " + app);
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            String key = args[i];
            if (!key.startsWith("--")) {
                usage("unexpected argument " + key);
            }
            if (i + 1 >= args.length) {
                usage(key + " needs a value");
            }
            opts.put(key, args[i + 1]);
        }
        return opts;
    }

    private static int intOption(Map<String, String> opts, String key, int fallback) {
        String value = opts.get(key);
        if (value == null) {
            return fallback;
        }
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            usage(key + " must be an integer, got '" + value + "'");
            return fallback;
        }
    }

    private static void usage(String problem) {
        System.err.println("AppClient: " + problem);
        System.err.println("usage: AppClient submit --name NAME [--name-length N] [--queue Q]"
                + " [--command CMD] [--view-acl ACL] [--modify-acl ACL] [--tags T1,T2]"
                + " [--memory-mb MB]");
        System.err.println("       AppClient kill --app ID [--diagnostics-length N]");
        System.exit(1);
    }
}
