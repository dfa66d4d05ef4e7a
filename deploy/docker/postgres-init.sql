-- One PostgreSQL, two databases: Airflow's metadata and MLflow's tracking/registry store (docker-compose.yaml).
-- Owned by the POSTGRES_USER of .env, which runs this script on the first start of an empty data volume.
CREATE DATABASE airflow;
CREATE DATABASE mlflow;
