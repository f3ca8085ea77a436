"""The CLI and real worker processes (every backend) on every scale-out deployment."""

from tests.scale.rerun import rerun_here

rerun_here(
    globals(),
    {
        "tests.cli.test_commands": [
            "test_info_counts_each_queue_in_text_and_json",
            "test_enqueue_prints_the_id_alone_and_stores_the_call",
        ],
        "tests.cli.test_failed": [
            "test_failed_list_and_show_name_each_dead_letter_and_its_error",
            "test_requeue_by_id_and_all_then_purge",
        ],
        "tests.cli.test_lifecycle_cli": [
            "test_events_prints_a_jobs_transitions_in_text_and_json",
            "test_info_counts_deferred_jobs",
        ],
        "tests.worker.test_worker_redis": [
            "test_a_job_runs_and_its_result_comes_back",
        ],
        "tests.worker.test_lifecycle": [
            "test_a_diamond_of_dependencies_runs_in_order",
            "test_callbacks_run_after_the_job_with_its_result_or_error",
        ],
    },
)
