"""SPEC section 8: "the whole SPEC section 3 behaviour runs against each" deployment. The
tests below are the existing ones, imported unchanged: tests/scale/conftest.py hands them
the deployment (a Redis Cluster, ...) where they ask for a Redis. Worker tests run on
`forking` (warm and cold shutdown on `threading` too) to stay within the suite's time budget."""

from tests.aio.test_async_batch import (  # noqa: F401
    test_jobs_of_one_coroutine_keep_their_order_within_each_priority,
)
from tests.cli.test_commands import (  # noqa: F401
    test_enqueue_prints_the_id_alone_and_stores_the_call,
    test_info_counts_each_queue_in_text_and_json,
)
from tests.cli.test_lifecycle_cli import (  # noqa: F401
    test_cancel_cancels_waiting_jobs_and_names_the_missing_ones,
    test_events_prints_a_jobs_transitions_in_text_and_json,
)
from tests.queue.test_cron import (  # noqa: F401
    scheduler,
    test_crons_lists_the_queues_entries_and_remove_cron_removes_one,
    test_each_tick_becomes_one_job_scheduled_at_its_tick_with_its_tick_in_meta,
    test_one_leader_at_a_time_and_a_dead_leaders_lease_runs_out,
)
from tests.queue.test_enqueue import (  # noqa: F401
    test_empty_deletes_waiting_jobs,
    test_enqueue_returns_a_job_with_a_string_id_and_the_stored_call,
)
from tests.queue.test_results import (  # noqa: F401
    test_get_raises_job_failed_with_type_message_and_traceback,
    test_get_returns_the_return_value,
)
from tests.worker.test_every_queue import (  # noqa: F401
    test_star_with_burst_drains_every_queue_then_exits_0,
)
from tests.worker.test_lifecycle import (  # noqa: F401
    test_a_diamond_of_dependencies_runs_in_order,
    test_a_failing_parent_cancels_its_children_unless_they_allow_failure,
    test_cancel_stops_a_running_job_within_2_s,
)
from tests.worker.test_native_core import (  # noqa: F401  (forking --slots: the native core)
    test_a_coroutine_holding_the_loop_keeps_its_lease_and_its_timeout,
)
from tests.worker.test_scheduling import (  # noqa: F401
    test_exhausted_retries_land_in_failed_and_requeue_all_runs_them_again,
)
from tests.worker.test_worker_redis import (  # noqa: F401
    test_a_job_blocked_in_sleep_past_its_timeout_fails_with_jobtimeout_and_the_next_runs,
    test_cold_shutdown_puts_running_jobs_back_at_the_front_without_an_attempt,
    test_priority_then_fifo_order_through_a_single_child,
    test_sigkill_of_the_supervisor_then_a_new_worker_finishes_every_job,
    test_the_worker_registers_heartbeats_and_a_warm_shutdown_loses_nothing_and_leaves_it,
)
