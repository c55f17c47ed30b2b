// Draws each figure's table (analysis/report_view.py puts it in a <script class="fig-view-data"> after its
// <div class="fig-view">) as an ECharts line chart: values on hover, one series per AQM toggled from the legend.
// Each drawn chart's div gets data-rendered="1", and window.favorlabViewRendered counts them, so a headless
// browser can check that every figure got its chart (tests/test_report_view.py).
(function () {
  window.favorlabViewRendered = 0;
  document.querySelectorAll("div.fig-view").forEach(function (div) {
    var spec = JSON.parse(div.nextElementSibling.textContent);
    var chart = echarts.init(div, null, { renderer: "canvas" });
    chart.setOption({
      animation: false,
      tooltip: { trigger: "item", formatter: function (p) {
        return p.seriesName + "<br>" + spec.x + " = " + p.value[0] + "<br>" + spec.y + " = " + p.value[1];
      } },
      legend: { type: "scroll", top: 0 },
      grid: { top: 50, left: 60, right: 20, bottom: 60 },
      dataZoom: [{ type: "inside" }, { type: "slider", height: 16, bottom: 10 }],
      xAxis: { type: "value", name: spec.x, nameLocation: "middle", nameGap: 25, scale: true },
      yAxis: { type: "value", name: spec.y, scale: true },
      series: spec.series.map(function (s) {
        return { name: s.name, type: "line", data: s.data, showSymbol: s.data.length < 200, symbolSize: 5 };
      })
    });
    div.setAttribute("data-rendered", "1");
    window.favorlabViewRendered += 1;
  });
})();
