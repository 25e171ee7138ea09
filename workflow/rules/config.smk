# The config file every stage reads (`--config`) is written when a real run reads the workflow (common.smk,
# merged_configfile). A dry run writes nothing: where the file does not exist yet (a new run), this rule stands in
# for it in the plan. It exists in dry runs only (which run no job), so that a real run's DAG, --summary and job
# counts are as before.


if DRY_RUN and not Path(CONFIG_FILE).is_file():

    rule resolved_config:
        """results/<run>/config.yaml, as a real run writes it when it reads the workflow."""
        output:
            CONFIG_FILE,
        localrule: True
        run:
            write_text_atomic(output[0], merged_config_text())
