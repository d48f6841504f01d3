"""Reads a ResourceManager's REST API with the PyPI `yarn-api-client` library
(as monitoring scripts and notebooks do) and prints what it got as one JSON
object, for integration/tests/web_rest.rs to check.

    python3 rest_client.py <rm web url> <mode> [application id ...]

mode `cluster`: info, metrics, scheduler, applications (with filters), one
application with its attempts and the AM attempt's containers, nodes and one
node, application statistics, and the library's error for a malformed id.
mode `scheduler`: the scheduler resource only.
"""

import json
import sys

import requests
from yarn_api_client import resource_manager
from yarn_api_client.errors import APIError


def client(url):
    # The library probes `<url>/cluster` (the RM's UI page) to find the active
    # RM. Where that page is not served, skip the probe and say so.
    if requests.get(url + "/cluster", timeout=30).status_code != 200:
        print("NOTE: /cluster is not served; skipping the library's active-RM probe",
              file=sys.stderr)
        resource_manager.check_is_active_rm = lambda *args, **kwargs: True
    return resource_manager.ResourceManager(service_endpoints=[url])


def main():
    url, mode = sys.argv[1], sys.argv[2]
    rm = client(url)
    out = {"endpoint": rm.get_active_endpoint()}
    if mode == "scheduler":
        out["scheduler"] = rm.cluster_scheduler().data
        print(json.dumps(out))
        return
    running, killed = sys.argv[3], sys.argv[4]
    out["info"] = rm.cluster_information().data
    out["metrics"] = rm.cluster_metrics().data
    out["scheduler"] = rm.cluster_scheduler().data
    out["apps"] = rm.cluster_applications().data
    out["apps_accepted"] = rm.cluster_applications(states=["ACCEPTED", "RUNNING"]).data
    out["apps_killed"] = rm.cluster_applications(states=["KILLED"]).data
    out["apps_finished"] = rm.cluster_applications(states=["FINISHED"]).data
    out["apps_bob"] = rm.cluster_applications(user="bob").data
    out["apps_limit"] = rm.cluster_applications(limit=1).data
    out["apps_type"] = rm.cluster_applications(application_types=["yarn"]).data
    out["apps_other_type"] = rm.cluster_applications(application_types=["SPARK"]).data
    out["apps_final_killed"] = rm.cluster_applications(final_status="KILLED").data
    out["app"] = rm.cluster_application(running).data
    attempts = rm.cluster_application_attempts(running).data
    out["attempts"] = attempts
    attempt = attempts["appAttempts"]["appAttempt"][0]["appAttemptId"]
    out["attempt"] = rm.cluster_application_attempt_info(running, attempt).data
    out["containers"] = rm.cluster_application_attempt_containers(running, attempt).data
    out["state"] = rm.cluster_application_state(running).data
    out["queue"] = rm.cluster_get_application_queue(running).data
    out["priority"] = rm.cluster_get_application_priority(running).data
    nodes = rm.cluster_nodes().data
    out["nodes"] = nodes
    out["node"] = rm.cluster_node(nodes["nodes"]["node"][0]["id"]).data
    out["stats"] = rm.cluster_application_statistics().data
    out["stats_killed_yarn"] = rm.cluster_application_statistics(
        states=["KILLED"], application_types=["YARN"]).data
    try:
        rm.cluster_application("application_bogus")
        out["malformed"] = "no error"
    except APIError as e:
        out["malformed"] = str(e)
    try:
        rm.cluster_application("application_1_9999")
        out["unknown"] = "no error"
    except APIError as e:
        out["unknown"] = str(e)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
