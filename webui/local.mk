# The admin web UI: plain HTML, CSS and ES modules, installed as they are.
dist_webui_DATA = webui/index.html
webuicssdir = $(webuidir)/css
dist_webuicss_DATA = webui/css/style.css
webuijsdir = $(webuidir)/js
dist_webuijs_DATA = webui/js/app.js webui/js/api.js webui/js/ui.js webui/js/metrics.js \
	webui/js/drafts.js
webuipagesdir = $(webuidir)/js/pages
dist_webuipages_DATA = webui/js/pages/dashboard.js webui/js/pages/policy.js \
	webui/js/pages/certs.js webui/js/pages/plugins.js webui/js/pages/audit.js \
	webui/js/pages/account.js
