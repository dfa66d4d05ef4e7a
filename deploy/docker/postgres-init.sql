-- One PostgreSQL, four databases: Airflow's metadata, MLflow's tracking/registry store, MLflow's users and
-- permissions (its basic-auth app) and the tuning DAG's Optuna studies (docker-compose.yaml).
-- Owned by the POSTGRES_USER of .env, which runs this script on the first start of an empty data volume.
CREATE DATABASE airflow;
CREATE DATABASE mlflow;
CREATE DATABASE mlflow_auth;
CREATE DATABASE optuna;
