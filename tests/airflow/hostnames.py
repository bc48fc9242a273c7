"""``AIRFLOW__CORE__HOSTNAME_CALLABLE`` targets: two Celery workers on one machine must report
different task-instance hostnames (both would report the machine's name otherwise)."""


def worker_a() -> str:
    return "worker-a"


def worker_b() -> str:
    return "worker-b"
