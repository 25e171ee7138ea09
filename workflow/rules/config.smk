# The config file every stage reads (`--config`), written by a job: reading the workflow writes nothing.


rule resolved_config:
    """results/<run>/config.yaml, written by a job, so that reading the workflow (a dry run included) writes nothing;
    its text is a param, so a changed config rewrites it and reruns the stages that read it."""
    output:
        CONFIG_FILE,
    params:
        text=lambda wildcards: merged_config_text(),  # a function: the text holds braces
    log:
        f"{RUN}/logs/resolved_config.log",
    localrule: True
    run:
        write_text_atomic(output[0], params.text)
