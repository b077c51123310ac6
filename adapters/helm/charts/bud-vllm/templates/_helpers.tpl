{{- define "bud-vllm.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "bud-vllm.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Service's name: the release's unless `serviceName` is set. */}}
{{- define "bud-vllm.serviceName" -}}
{{- default .Release.Name .Values.serviceName -}}
{{- end -}}

{{/* GPUs of one replica: every tensor-parallel rank of every pipeline stage holds one. */}}
{{- define "bud-vllm.gpus" -}}
{{- mul (int64 .Values.tensorParallelSize) (int64 .Values.pipelineParallelSize) -}}
{{- end -}}

{{/*
The server's arguments, as a YAML list. Values arrive as JSON numbers (float64), which print
in exponent form from 1e6 on, so whole numbers go through int64.
*/}}
{{- define "bud-vllm.args" -}}
{{- $v := .Values -}}
{{- $args := list "--model" $v.model "--served-model-name" (default $v.model $v.servedModelName) -}}
{{- $args = concat $args (list "--tensor-parallel-size" (toString (int64 $v.tensorParallelSize))) -}}
{{- $args = concat $args (list "--pipeline-parallel-size" (toString (int64 $v.pipelineParallelSize))) -}}
{{- $args = concat $args (list "--max-model-len" (toString (int64 $v.maxModelLen))) -}}
{{- $args = concat $args (list "--max-num-seqs" (toString (int64 $v.maxNumSeqs))) -}}
{{- $args = concat $args (list "--dtype" $v.dtype) -}}
{{- $args = concat $args (list "--gpu-memory-utilization" (toString $v.gpuMemoryUtilization)) -}}
{{- with $v.quantization }}
{{- $args = concat $args (list "--quantization" .) -}}
{{- end }}
{{- $args = concat $args ($v.extraArgs | default list) (list "--port" "8000") -}}
{{- toYaml $args -}}
{{- end -}}
